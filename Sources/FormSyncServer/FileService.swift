import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// What the server checks of the files a payload names, deferred files (docs/PROTOCOL.md,
/// "Deferred files": a submission may name a file by its digest before the bytes arrive; the
/// document is stored with the file pending, and the upload of those bytes completes it),
/// storing a file whole (`POST /files`), and reading files back (`GET /files/<id>`,
/// `GET /files/sha-256/<hex>`, `GET /pending-files`).
struct FileService: ServerPart {
    let context: ServerContext

    /// Stores a file whose `digest` was computed outside the lock. Runs inside the ledger's transaction.
    func storeFile(_ request: HTTPRequest, digest: Data, caller: Caller) throws -> HTTPResponse {
        let documentID = request.header(ProtocolHeader.document)!
        guard let header = request.header(ProtocolHeader.contentDigest), let claimed = WireSyntax.parseDigest(header) else {
            return .problem(.digestMissing, detail: "Content-Digest: sha-256=:…: is required")
        }
        guard claimed == digest else {
            return .problem(.digestMismatch, detail: "Content-Digest does not match the bytes received")
        }
        if let refusal = access.boundElsewhere(documentID, form: nil, caller: caller) { return refusal }
        if try store.upload(document: documentID) != nil {
            return .problem(.documentExists, detail: "file document \(documentID) is a resumable upload; finish it at /uploads")
        }
        let contentType = request.header("content-type")
        let mediaType = MediaSignature.mediaType(of: request.body) ?? ""
        if try store.file(document: documentID) == nil,
            let refusal = try refusalByPendingFiles(
                workspace: caller.workspace, principal: caller.principal, digest: digest, byteCount: Int64(request.body.count),
                contentType: contentType, mediaType: mediaType)
        {
            return refusal
        }
        let (id, created, sameBytes) = try store.storeFile(
            documentID, workspace: caller.workspace, principal: caller.principal, bytes: request.body, digest: digest,
            contentType: contentType, mediaType: mediaType, at: now())
        guard sameBytes else {
            return .problem(.documentExists, detail: "file document \(documentID) already holds other bytes", extra: ["id": id])
        }
        if created {
            try completePendingFiles(
                workspace: caller.workspace, digest: digest, fileID: id, byteCount: Int64(request.body.count), contentType: contentType,
                mediaType: mediaType, fileDocument: documentID)
        }
        return .json(
            created ? 201 : 200,
            [
                Acknowledgement.documentID: documentID, Acknowledgement.id: id, Acknowledgement.byteCount: request.body.count,
                "digest": WireSyntax.digestHeader(digest),
            ])
    }

    /// A payload whose file references were checked: the payload with every pending file the
    /// server already holds completed, the files still pending, or the field errors.
    enum CheckedFiles {
        case checked(payload: Data, pending: [FileUse])
        case refused(HTTPResponse)
    }

    /// Checks every file reference of a submission against what the server stored, inside the
    /// write's transaction: a file id must be a file of the caller's workspace, with the size and
    /// media type the payload says, and bytes whose signature the field accepts. A pending file
    /// the workspace already holds is completed now; any other stays pending.
    func checkFiles(_ uses: [FileUse], payload: Data, caller: Caller) throws -> CheckedFiles {
        var errors: [[String: String]] = []
        var completed: [String: Int64] = [:]
        var pending: [FileUse] = []
        for use in uses {
            let ref = use.ref
            if ref.isPending && !settings.acceptsDeferredFiles {
                errors.append([
                    "pointer": use.pointer, "code": "pending-file",
                    "detail": "This server needs a file's bytes before the submission that names it.",
                ])
            } else if ref.isPending {
                guard let sha = ref.sha256 else { continue }  // the validator refused it already
                try store.lockFileDigest(workspace: caller.workspace, digest: sha)
                guard let stored = try store.storedFile(workspace: caller.workspace, digest: sha) else {
                    pending.append(use)
                    continue
                }
                if let problem = Self.mismatch(use, stored: stored) {
                    errors.append(problem)
                } else {
                    completed[ref.digest!] = stored.id
                }
            } else if ref.id > 0 {
                guard let stored = try store.storedFile(id: ref.id), stored.workspace == caller.workspace else {
                    errors.append([
                        "pointer": use.pointer, "code": "file-unknown", "detail": "No file \(ref.id) is stored in this workspace.",
                    ])
                    continue
                }
                if let problem = Self.mismatch(use, stored: stored) { errors.append(problem) }
            }
        }
        guard errors.isEmpty else {
            return .refused(
                .problem(.invalidPayload, detail: "\(errors.count) file reference(s) do not match the files stored", errors: errors))
        }
        var resolved = payload
        for (digest, id) in completed {
            for use in uses where use.ref.digest == digest && use.ref.isPending {
                resolved = Self.replacing(
                    use.ref, with: FileRef(id: id, byteCount: use.ref.byteCount, contentType: use.ref.contentType), in: resolved)
            }
        }
        return .checked(payload: resolved, pending: pending)
    }

    /// Why a reference does not match the stored file (a field error), or nil when it does.
    static func mismatch(_ use: FileUse, stored: StoredFile) -> [String: String]? {
        let ref = use.ref
        if let size = ref.byteCount, size != stored.byteCount {
            return [
                "pointer": use.pointer, "code": ProblemCode.fileMismatch.rawValue,
                "detail": "The file stored is \(stored.byteCount) bytes; the payload says \(size).",
            ]
        }
        if let type = ref.contentType, let declared = stored.contentType,
            MediaSignature.canonical(type) != MediaSignature.canonical(declared)
        {
            return [
                "pointer": use.pointer, "code": ProblemCode.fileMismatch.rawValue,
                "detail": "The file was uploaded as \(declared); the payload says \(type).",
            ]
        }
        if let problem = signatureProblem(mediaType: stored.mediaType, declared: ref.contentType, accepted: use.contentTypes) {
            return ["pointer": use.pointer, "code": "content_type", "detail": problem]
        }
        return nil
    }

    /// Why bytes whose signature says `mediaType` ("" not recognised, nil not read) cannot stand
    /// as `declared` in a field accepting `accepted`; nil when they can.
    static func signatureProblem(mediaType: String?, declared: String?, accepted: [String]) -> String? {
        guard let mediaType else { return nil }
        return MediaSignature.problem(detected: mediaType.isEmpty ? nil : mediaType, declared: declared, accepted: accepted)
    }

    /// Records a written document's pending files (none clears them), with the record it wrote.
    /// They stay the document owner's whoever wrote this version: a back-office edit leaves
    /// them on the list of the device that is to upload them.
    /// `record`: the record whose copy of the file at a pointer completes with it, if any.
    func notePendingFiles(
        _ pending: [FileUse], documentID: String, caller: Caller, record: (_ pointer: String) -> (type: String, id: Int64)?
    ) throws {
        let now = now()
        let owner = store.owner(of: documentID)?.principal ?? caller.principal
        try store.setPendingFiles(
            document: documentID,
            pending.map { use in
                let record = record(use.pointer)
                return PendingFile(
                    documentID: documentID, pointer: use.pointer, workspace: caller.workspace, principal: owner,
                    digest: use.ref.sha256 ?? Data(),
                    byteCount: use.ref.byteCount ?? 0, contentType: use.ref.contentType ?? "", accepted: use.contentTypes,
                    recordType: record?.type, recordID: record?.id, since: now)
            })
    }

    /// Why a file of `byteCount` bytes, declared `contentType`, whose bytes say `mediaType`,
    /// cannot complete `pending`; nil when it can.
    static func mismatch(_ pending: PendingFile, byteCount: Int64, contentType: String?, mediaType: String?) -> String? {
        if pending.byteCount != byteCount {
            return "The upload is \(byteCount) bytes; document \(pending.documentID) announced \(pending.byteCount)."
        }
        if let contentType, MediaSignature.canonical(contentType) != MediaSignature.canonical(pending.contentType) {
            return "The upload is \(contentType); document \(pending.documentID) announced \(pending.contentType)."
        }
        return signatureProblem(mediaType: mediaType, declared: pending.contentType, accepted: pending.accepted)
    }

    /// Whether a file `principal` is about to store matches every pending file of its own
    /// documents waiting for its digest in its workspace; the refusal (422 `file-mismatch`, one
    /// error per pending reference) when not. Another principal's announcement never refuses
    /// it (nor is named to it): one that the bytes do not match is left waiting, as it would be
    /// had these bytes never come. `mediaType`: what the bytes say ("" not recognised; nil
    /// before they arrived).
    func refusalByPendingFiles(
        workspace: String, principal: String, digest: Data, byteCount: Int64, contentType: String?, mediaType: String?
    ) throws -> HTTPResponse? {
        try store.lockFileDigest(workspace: workspace, digest: digest)
        var errors: [[String: String]] = []
        for pending in try store.pendingFiles(workspace: workspace, digest: digest) where pending.principal == principal {
            if let detail = Self.mismatch(pending, byteCount: byteCount, contentType: contentType, mediaType: mediaType) {
                errors.append([
                    "document_id": pending.documentID, "pointer": pending.pointer, "code": ProblemCode.fileMismatch.rawValue,
                    "detail": detail,
                ])
            }
        }
        guard !errors.isEmpty else { return nil }
        return .problem(
            .fileMismatch, detail: "the file does not match what \(errors.count) pending reference(s) announced", errors: errors)
    }

    /// Completes every pending file of `workspace` waiting for `digest` that the stored file
    /// `fileID` matches: each document and record that names it by digest now names it by id
    /// (a new version, and a change in the feed). One it does not match (another principal
    /// announced another size or type) keeps waiting.
    func completePendingFiles(
        workspace: String, digest: Data, fileID: Int64, byteCount: Int64, contentType: String?, mediaType: String?, fileDocument: String
    ) throws {
        let waiting = try store.pendingFiles(workspace: workspace, digest: digest).filter {
            Self.mismatch($0, byteCount: byteCount, contentType: contentType, mediaType: mediaType) == nil
        }
        guard !waiting.isEmpty else { return }
        let author = Authorship(principal: nil, device: nil, at: now(), capturedAt: nil, via: .fileCompleted, documentID: fileDocument)
        var documents: Set<String> = []
        var records: Set<String> = []
        for pending in waiting {
            let announced = FileRef(
                id: 0, byteCount: pending.byteCount, contentType: pending.contentType, digest: FileRef.digestText(digest))
            let stored = FileRef(id: fileID, byteCount: pending.byteCount, contentType: pending.contentType)
            if documents.insert(pending.documentID).inserted, let document = store.document(pending.documentID) {
                let payload = Self.replacing(announced, with: stored, in: document.payload)
                if payload != document.payload {
                    _ = try versions.updateDocument(pending.documentID, payload: payload, countingWrite: false, by: author)
                }
            }
            if let type = pending.recordType, let id = pending.recordID, records.insert("\(type):\(id)").inserted,
                let record = try store.record(workspace: workspace, type: type, id: id)
            {
                let payload = Self.replacing(announced, with: stored, in: record.payload)
                if payload != record.payload {
                    _ = try versions.putRecord(
                        workspace: workspace, type: type, id: id, scope: record.scope, payload: payload,
                        files: fileIDs(ofRecord: type, payload), by: author)
                }
            }
            try store.removePendingFile(document: pending.documentID, pointer: pending.pointer)
        }
    }

    /// `json` with every occurrence of `old` (as the payload encoder writes it) replaced by `new`.
    /// Stored payloads are canonical JSON from one writer, and a file reference is an object no
    /// text value can hold unescaped, so the bytes stand for the value.
    static func replacing(_ old: FileRef, with new: FileRef, in json: Data) -> Data {
        var oldBytes = JSONOutput()
        var newBytes = JSONOutput()
        guard (try? old.writeJSON(to: &oldBytes)) != nil, (try? new.writeJSON(to: &newBytes)) != nil else { return json }
        return json.replacing(oldBytes.data, with: newBytes.data)
    }

    /// `GET /files/sha-256/<64 hex digits>`: whether the caller's workspace holds a file with
    /// these bytes (`200` with its id, size and type; `404 no-such-file`), so that a device skips
    /// uploading bytes the server has (docs/PROTOCOL.md, "Looking a file up by digest").
    func fileLookup(_ request: HTTPRequest) -> HTTPResponse {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        let hex = request.path.dropFirst("/files/sha-256/".count)
        guard let digest = WireSyntax.hexBytes(hex), digest.count == 32 else {
            return .problem(.malformed, detail: "the path names a SHA-256 as 64 lower-case hex digits")
        }
        return locked {
            do {
                guard let file = try store.storedFile(workspace: caller.workspace, digest: digest) else {
                    return .problem(.noSuchFile, detail: "no file with these bytes in this workspace")
                }
                var object: [String: Any] = ["id": file.id, "byte_count": file.byteCount, "digest": FileRef.digestText(file.digest)]
                if let type = file.contentType { object["content_type"] = type }
                return .json(200, object, headers: [("Cache-Control", "no-store")])
            } catch {
                return .problem(.busy, detail: "the store cannot answer now", headers: [("Retry-After", "5")])
            }
        }
    }

    /// The stored files (positive ids) a record of `type` names in `payload`.
    static func fileIDs(ofRecord type: String, _ payload: Data, in records: RecordRegistry) -> [Int64] {
        records[type]?.fileUses(payload).map(\.ref.id).filter { $0 > 0 } ?? []
    }

    func fileIDs(ofRecord type: String, _ payload: Data) -> [Int64] {
        Self.fileIDs(ofRecord: type, payload, in: recordTypes)
    }

    /// `GET /files/<id>`: a stored file of the caller's workspace that its principal uploaded
    /// or a record it sees names (any file of the workspace for the back office), whole (`200`) or, with
    /// `Range: bytes=<first>-[<last>]`, the part asked for (`206` with `Content-Range`), so that
    /// a device fetches a record's photos in pieces and resumes where a piece was cut off.
    /// `ETag` is the file's digest, and `If-Range` naming another sends it whole.
    func fileDownload(_ request: HTTPRequest) -> HTTPResponse {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        let text = request.path.dropFirst("/files/".count)
        guard text.utf8.count <= 16, let id = Int64(text), id > 0 else {
            return .problem(.noSuchFile, detail: "no file \(text) here")
        }
        // A store that cannot answer is a 503, never a 404: a device told "no such file" would
        // give the file up.
        let found: Result<StoredFile?, any Error> = locked {
            Result {
                guard let file = try store.storedFile(id: id), file.workspace == caller.workspace,
                    try caller.role == .backOffice || store.mayRead(file: id, workspace: caller.workspace, principal: caller.principal)
                else { return nil }
                return file
            }
        }
        let file: StoredFile
        switch found {
        case .failure(let error):
            return failure(error, "file error")
        case .success(nil):
            return .problem(.noSuchFile, detail: "no file \(id) in this workspace")
        case .success(let stored?):
            file = stored
        }
        let etag = "\"" + file.digest.map { String(format: "%02x", $0) }.joined() + "\""
        var headers: [(String, String)] = [
            ("Content-Type", file.contentType ?? "application/octet-stream"), ("ETag", etag), ("Accept-Ranges", "bytes"),
            (ProtocolHeader.reprDigest, FileRef.digestText(file.digest)), ("Cache-Control", "private, max-age=31536000, immutable"),
        ]
        let total = file.byteCount
        // The bytes are read as the client takes them, a piece at a time: a file of any size,
        // to any number of slow readers, costs each connection one piece of memory.
        func body(from first: Int64, through last: Int64) -> HTTPBodyStream {
            let digest = file.digest
            return HTTPBodyStream(count: last - first + 1) { [self] offset, count in
                try locked { try store.fileBytes(digest: digest, from: first + offset, count: count) }
            }
        }
        guard let range = request.header("range"), request.header("if-range").map({ $0 == etag }) ?? true else {
            return HTTPResponse(status: 200, headers: headers, stream: body(from: 0, through: total - 1))
        }
        guard let (first, last) = WireSyntax.byteRange(range, total: total) else {
            headers.append(("Content-Range", "bytes */\(total)"))
            var refusal = HTTPResponse.problem(.badRange, detail: "the range \(range.prefix(64)) is not within the file's \(total) bytes")
            refusal.headers.append(contentsOf: headers.filter { $0.0 == "Content-Range" })
            return refusal
        }
        headers.append(("Content-Range", "bytes \(first)-\(last)/\(total)"))
        return HTTPResponse(status: 206, headers: headers, stream: body(from: first, through: last))
    }

    /// `GET /pending-files?limit=<n>`: the files documents named before their bytes arrived, oldest
    /// first; the back office sees its workspace's, a device its own documents'.
    func pendingFilesRoute(_ request: HTTPRequest) -> HTTPResponse {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        var limit = 100
        if let query = request.query {
            guard query.hasPrefix("limit="), let value = Int(query.dropFirst(6)), query.utf8.count <= 10, (1...1_000).contains(value) else {
                return .problem(.badQuery, detail: "the query takes limit=, a number from 1 to 1000")
            }
            limit = value
        }
        return locked {
            do {
                let waiting = try store.pendingFiles(workspace: caller.workspace, principal: caller.feedPrincipal, limit: limit)
                let items: [[String: Any]] = waiting.map { pending in
                    typealias E = PendingFileList.Entry
                    var item: [String: Any] = [
                        E.documentID: pending.documentID, E.pointer: pending.pointer, E.digest: FileRef.digestText(pending.digest),
                        E.byteCount: pending.byteCount, E.contentType: pending.contentType, E.since: WireSyntax.timestamp(pending.since),
                    ]
                    if let form = store.document(pending.documentID) {
                        item[E.form] = form.form
                        item[E.id] = form.id
                    }
                    return item
                }
                return .json(200, [PendingFileList.pending: items], headers: [("Cache-Control", "no-store")])
            } catch {
                return .problem(.busy, detail: "the store cannot answer now", headers: [("Retry-After", "5")])
            }
        }
    }
}
