import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// Resumable uploads (docs/PROTOCOL.md, "Resumable uploads"): `POST /uploads` creates the
/// upload resource of a file document, `HEAD` asks for the offset the server holds, `PATCH`
/// appends at that offset, and the append with `Upload-Complete: ?1` checks the length and the
/// digest and stores the file. An upload cut off anywhere continues from the server's offset
/// under the same document identity; finished ranges are never sent again.
struct UploadService: ServerPart {
    let context: ServerContext

    /// `POST /uploads`: `FormSync-Document`, `Upload-Length`, `Repr-Digest`. The same document
    /// again finds its upload (201 with its offset), or, when finished, its file (200).
    func createUpload(_ request: HTTPRequest) -> HTTPResponse {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        guard let documentID = request.header(ProtocolHeader.document), WireSyntax.isIdentifier(documentID) else {
            return .problem(.badDocumentID, detail: "FormSync-Document is required")
        }
        guard let lengthText = request.header(ProtocolHeader.uploadLength), lengthText.utf8.count <= 19, let length = Int64(lengthText),
            length >= 0
        else {
            return .problem(.badUploadLength, detail: "Upload-Length: the file's size in bytes is required")
        }
        guard length <= SyncServer.maxUploadBytes else {
            return .problem(.tooLarge, detail: "an upload holds at most \(SyncServer.maxUploadBytes) bytes")
        }
        guard let digestHeader = request.header(ProtocolHeader.reprDigest), let digest = WireSyntax.parseDigest(digestHeader),
            digest.count == 32
        else {
            return .problem(.digestMissing, detail: "Repr-Digest: sha-256=:…: of the whole file is required")
        }
        return locked {
            do {
                if let refusal = access.boundElsewhere(documentID, form: nil, caller: caller) { return refusal }
                // A file stored whole (POST /files) under this document: the same file is done,
                // another one is refused, and no second upload is ever begun for it.
                if let stored = try store.file(document: documentID) {
                    guard stored.byteCount == length, stored.digest == digest else {
                        return .problem(
                            .documentExists, detail: "file document \(documentID) already holds other bytes",
                            extra: ["id": stored.id])
                    }
                    return .json(
                        200,
                        [
                            Acknowledgement.documentID: documentID, Acknowledgement.id: stored.id, Acknowledgement.byteCount: length,
                            "digest": WireSyntax.digestHeader(digest),
                        ])
                }
                if let existing = try store.upload(document: documentID) {
                    guard existing.length == length, existing.digest == digest else {
                        return .problem(.documentExists, detail: "file document \(documentID) is being uploaded with other bytes")
                    }
                    if let fileID = existing.fileID { return uploadDone(existing, fileID: fileID, status: 200) }
                    return uploadState(existing, status: 201)
                }
                // Abandoned uploads go first, then the quotas of what is left.
                let limits = settings.uploadLimits
                try store.expireUploads(before: now().addingReportingOverflow(-limits.expiryMilliseconds).partialValue, limit: 100)
                let held = try store.unfinishedUploads(principal: caller.principal, workspace: caller.workspace)
                if held.count >= Int64(limits.maxUnfinishedPerPrincipal)
                    || held.bytes.addingReportingOverflow(length).partialValue > limits.maxUnfinishedBytesPerPrincipal
                    || held.workspaceBytes.addingReportingOverflow(length).partialValue > limits.maxUnfinishedBytesPerWorkspace
                {
                    return .problem(
                        .uploadQuota,
                        detail:
                            "too many unfinished uploads (\(held.count), \(held.bytes) bytes announced); finish or let them expire first",
                        headers: [("Retry-After", "60")])
                }
                // Bytes that can never complete what a document announced are refused before they travel.
                if let refusal = try store.transaction({
                    try files.refusalByPendingFiles(
                        workspace: caller.workspace, principal: caller.principal, digest: digest, byteCount: length,
                        contentType: request.header("content-type"), mediaType: nil)
                }) {
                    return refusal
                }
                let upload = StoredUpload(
                    uploadID: UUID().uuidString.lowercased(), documentID: documentID, workspace: caller.workspace, length: length,
                    offset: 0,
                    digest: digest, contentType: request.header("content-type"), fileID: nil, principal: caller.principal)
                try store.createUpload(upload, at: now())
                return uploadState(upload, status: 201)
            } catch {
                return failure(error, "upload error")
            }
        }
    }

    /// `HEAD /uploads/{id}`: the offset the server holds.
    func uploadOffset(_ request: HTTPRequest) -> HTTPResponse {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        return locked {
            guard let upload = try? owned(request, by: caller) else {
                return .problem(.noSuchUpload, detail: "no such upload")
            }
            var response = uploadState(upload, status: 204)
            response.headers.append(("Cache-Control", "no-store"))
            return response
        }
    }

    /// `PATCH /uploads/{id}`: appends the body at `Upload-Offset`; with `Upload-Complete: ?1`
    /// the file must then be whole, and its digest must match. The bytes are written, synced and
    /// hashed outside the server's lock, so that a large append or a long completion never holds
    /// up other requests; one append at a time per upload (another meanwhile is 409, transient).
    func appendUpload(_ request: HTTPRequest) -> HTTPResponse {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        guard let offsetText = request.header(ProtocolHeader.uploadOffset), offsetText.utf8.count <= 19, let offset = Int64(offsetText),
            offset >= 0
        else {
            return .problem(.badUploadOffset, detail: "Upload-Offset is required")
        }
        let complete = request.header(ProtocolHeader.uploadComplete) == "?1"
        // 1. Under the lock: the upload, its offset and length, and the mark that it is busy.
        let claimed: Either<StoredUpload, HTTPResponse> = locked {
            do {
                guard let upload = try owned(request, by: caller) else {
                    return .second(.problem(.noSuchUpload, detail: "no such upload"))
                }
                if let fileID = upload.fileID { return .second(uploadDone(upload, fileID: fileID, status: 200)) }
                guard offset == upload.offset else {
                    var response = HTTPResponse.problem(
                        .mismatchingUploadOffset, detail: "the server holds \(upload.offset) bytes of this upload, not \(offset)")
                    response.headers.append((ProtocolHeader.uploadOffset, String(upload.offset)))
                    return .second(response)
                }
                let (end, overflow) = offset.addingReportingOverflow(Int64(request.body.count))
                guard !overflow, end <= upload.length else {
                    return .second(
                        .problem(.uploadTooLong, detail: "the append ends past the announced Upload-Length \(upload.length)"))
                }
                if complete && end != upload.length {
                    return .second(
                        .problem(.uploadIncomplete, detail: "Upload-Complete with \(end) of \(upload.length) bytes"))
                }
                guard try store.claimAppend(upload.uploadID, at: now()) else {
                    return .second(
                        .problem(
                            .uploadBusy, detail: "another append to this upload is in progress",
                            headers: [("Retry-After", "1")]))
                }
                return .first(upload)
            } catch {
                return .second(failure(error, "upload error"))
            }
        }
        let upload: StoredUpload
        switch claimed {
        case .first(let found): upload = found
        case .second(let response): return response
        }
        defer { store.releaseAppend(upload.uploadID) }
        let end = offset + Int64(request.body.count)
        do {
            // 2. Outside the unit of work: the bytes stored, and at completion the whole file's digest.
            try store.appendUpload(upload.uploadID, bytes: request.body, at: offset, now: now())
            var updated = upload
            updated.offset = end
            guard complete else { return uploadState(updated, status: 204) }
            let digest = try store.uploadDigest(upload.uploadID)
            // 3. In one unit of work again: the stored file, or a start over.
            return try locked {
                guard digest == upload.digest else {
                    // The bytes are not the file announced: start over rather than keep them.
                    try store.restartUpload(upload.uploadID, at: now())
                    return .problem(.digestMismatch, detail: "the uploaded bytes do not match Repr-Digest; the upload starts over")
                }
                let mediaType = MediaSignature.mediaType(of: try store.uploadPrefix(upload.uploadID)) ?? ""
                return try store.transaction {
                    if let refusal = try files.refusalByPendingFiles(
                        workspace: upload.workspace, principal: upload.principal ?? caller.principal, digest: digest,
                        byteCount: upload.length, contentType: upload.contentType, mediaType: mediaType)
                    {
                        // The bytes are whole but not what a document announced: they are not kept.
                        try store.restartUpload(upload.uploadID, at: now())
                        return refusal
                    }
                    let fileID = try store.completeUpload(
                        upload, digest: digest, mediaType: mediaType, principal: upload.principal ?? caller.principal, at: now())
                    try files.completePendingFiles(
                        workspace: upload.workspace, digest: digest, fileID: fileID, byteCount: upload.length,
                        contentType: upload.contentType, mediaType: mediaType, fileDocument: upload.documentID)
                    return uploadDone(updated, fileID: fileID, status: 201)
                }
            }
        } catch {
            return failure(error, "upload error")
        }
    }

    /// The upload a request's path names, when it is the caller's: in its workspace, begun by
    /// its principal (or any, for the back office).
    private func owned(_ request: HTTPRequest, by caller: Caller) throws -> StoredUpload? {
        let id = String(request.path.dropFirst("/uploads/".count))
        guard WireSyntax.isIdentifier(id), let upload = try store.upload(id: id), upload.workspace == caller.workspace,
            caller.owns(upload.principal)
        else { return nil }
        return upload
    }

    private func uploadState(_ upload: StoredUpload, status: Int) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: [
                ("Location", "/uploads/\(upload.uploadID)"), (ProtocolHeader.uploadOffset, String(upload.offset)),
                (ProtocolHeader.uploadLength, String(upload.length)),
                (ProtocolHeader.uploadComplete, upload.fileID == nil ? "?0" : "?1"), ("Upload-Draft-Interop-Version", "6"),
            ], body: Data())
    }

    private func uploadDone(_ upload: StoredUpload, fileID: Int64, status: Int) -> HTTPResponse {
        .json(
            status,
            [
                Acknowledgement.documentID: upload.documentID, Acknowledgement.id: fileID, Acknowledgement.byteCount: upload.length,
                "digest": WireSyntax.digestHeader(upload.digest),
            ],
            headers: [
                ("Location", "/uploads/\(upload.uploadID)"), (ProtocolHeader.uploadOffset, String(upload.length)),
                (ProtocolHeader.uploadComplete, "?1"),
            ])
    }
}
