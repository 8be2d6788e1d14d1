import FormSyncModel
import Foundation

extension ItemLifecycle {
    /// An enqueue's writes, inside the transaction the outbox opened for it: what it reads
    /// (an earlier submission of the document, known placeholders) includes every enqueue
    /// committed or batched before it. Appends the stash copies it made to `copiesMade`, which are
    /// removed if the transaction does not commit; removes them itself when it throws.
    func capture<P: FormPayload>(
        _ payload: P, attachments: [Outbox.Attachment], documentID: String?, creates: Int64?,
        base: (payload: P, version: String)?, prepared: PreparedPayload, copiesMade: inout [String]
    ) throws -> Int64 {
        var json = prepared.json
        let baseJSON = prepared.baseJSON
        let now = environment.now()
        let workspace = self.workspace
        let known = documentID != nil
        let documentID = documentID ?? environment.newID()
        let digest = prepared.digest
        // A document the app names may have been enqueued before (in this transaction's batch, too);
        // a freshly minted one cannot.
        if known, let existing = try store.documentItem(workspace: workspace, documentID: documentID, digest: digest) {
            return existing
        }
        let earlier = known ? try store.latestDocumentItem(workspace: workspace, documentID: documentID) : nil
        // A form that creates a record always stands for it under a placeholder id, so the
        // record shows on the device (and can be referenced and edited) before it lands.
        // (A later write to a document already sent is an edit of it, and creates nothing.)
        let creates =
            creates
            ?? { () -> Int64? in
                guard P.recordAction?.kind == .creates, base == nil else { return nil }
                guard let earlier else { return placeholderIDs.next() }
                return (earlier.state == .pending || earlier.state == .blocked) && earlier.sends == 0 && earlier.principal == principal
                    ? earlier.produces : nil
            }()
        let attached = Dictionary(attachments.map { ($0.placeholder, $0) }, uniquingKeysWith: { a, _ in a })
        let placeholders = payload.placeholders
        let fresh = try attached.keys.filter { try placeholders.contains($0) && !isKnown($0) }
        let blocked = try checkDependencies(placeholders.filter { !fresh.contains($0) })

        var copies: [Int64: (attachment: Outbox.Attachment, copy: FileStash.Copy, shared: Bool)] = [:]
        do {
            for attachment in attachments where fresh.contains(attachment.placeholder) && copies[attachment.placeholder] == nil {
                var (used, copy) = try stashed(attachment)
                // One copy per digest: bytes already stashed for a waiting upload are not kept twice.
                var shared = false
                if let existing = try copies.values.first(where: { $0.copy.sha256 == copy.sha256 })?.copy.path
                    ?? store.stashedCopy(workspace: workspace, sha256: copy.sha256),
                    existing != copy.path, FileManager.default.fileExists(atPath: existing)
                {
                    stash.remove(copy.path)
                    copy.path = existing
                    shared = true
                }
                copies[attachment.placeholder] = (used, copy, shared)
            }
            var stored = payload
            var declaredTypes: [Int64: String] = [:]
            if !copies.isEmpty {
                stored = payload.mappingFiles { ref in
                    guard let (attachment, copy, _) = copies[ref.id] else { return ref }
                    let type = attachment.contentType ?? ref.contentType
                    declaredTypes[ref.id] = type
                    return FileRef(id: ref.id, byteCount: copy.byteCount, contentType: type)
                }
            }
            // The files' fields: whether each may go after the submission, and, for the files
            // stashed now, what their bytes say they are against what the app and the field say.
            // (A file attached by an earlier submission and named again without an attachment
            // is waited for.)
            var deferrable: [Int64: Bool] = [:]
            if !attachments.isEmpty {
                var (errors, uses) = FileUse.gathering { stored.validate() }
                for use in uses where use.ref.id < 0 {
                    deferrable[use.ref.id] = (deferrable[use.ref.id] ?? true) && use.defers
                    guard let (_, copy, _) = copies[use.ref.id] else { continue }
                    // (A type the field refuses outright was reported by its own rule.)
                    if !errors.contains(where: { $0.pointer == use.pointer && $0.code == "content_type" }),
                        let problem = MediaSignature.problem(
                            detected: copy.mediaType, declared: use.ref.contentType, accepted: use.contentTypes)
                    {
                        errors.append(FieldError(pointer: use.pointer, code: "content_type", detail: problem))
                    }
                }
                guard errors.isEmpty else { throw OutboxError.invalidPayload(errors) }
            }
            if !copies.isEmpty { json = try PreparedPayload.encode(stored) }
            let endpoint = placeholders.isEmpty ? stored.endpoint : nil
            if !copies.isEmpty { CrashPoint.stashCopied.reach() }
            let id = try { () throws -> Int64 in
                for placeholder in placeholders {
                    guard let (attachment, copy, _) = copies[placeholder] else { continue }
                    // Files with the same bytes share a lane: the second asks the server for the
                    // first's bytes by digest once the first landed, and sends none of them.
                    let lane = "file:" + copy.sha256.map { String(format: "%02x", $0) }.joined()
                    var file = OutboxStore.Row.new(
                        kind: .file, workspace: workspace, lane: lane, documentID: environment.newID(), attemptID: environment.newID(),
                        now: now, produces: placeholder)
                    file.filePath = copy.path
                    file.principal = principal
                    file.contentType = declaredTypes[placeholder] ?? attachment.contentType
                    file.byteCount = copy.byteCount
                    file.sha256 = copy.sha256
                    file.id = try store.insert(file, now: now)
                    created(file)
                    // A file too large for the network's cost is not due until that changes.
                    let held = meteredFileLimit.map { copy.byteCount > $0 } ?? false
                    try store.addToLane(workspace: workspace, lane: file.lane, head: file.id, due: held ? nil : now)
                }
                if var replaced = earlier, replaced.kind == .submission, replaced.form == P.formName,
                    replaced.state == .pending || replaced.state == .blocked, replaced.sends == 0, !inFlight.contains(replaced.id),
                    replaced.principal == principal,
                    creates == nil || creates == replaced.produces
                {
                    try store.forgetDocumentDigests(item: replaced.id, workspace: workspace, documentID: documentID)
                    replaced.payload = json
                    replaced.formVersion = P.formVersion
                    replaced.endpoint = endpoint
                    replaced.attemptID = environment.newID()
                    try replaceDependencies(of: replaced.id, with: placeholders, deferrable: deferrable)
                    try placeItemRecords(of: replaced, json: json, actions: P.listRecordActions, now: now)
                    try store.recordDocument(workspace: workspace, documentID: documentID, digest: digest, item: replaced.id)
                    try reopen(&replaced, now: now)
                    withRecords { $0.noteRecord(of: replaced) }
                    return replaced.id
                }
                let lane =
                    try earlier.flatMap { $0.state == .pending || $0.state == .leased ? $0.lane : nil } ?? payload.lane.map {
                        try store.entityLane($0, workspace: workspace)
                    } ?? "document:\(documentID)"
                var row = OutboxStore.Row.new(
                    kind: .submission, workspace: workspace, lane: lane, documentID: documentID, attemptID: environment.newID(), now: now,
                    produces: creates)
                row.form = P.formName
                row.formVersion = P.formVersion
                row.principal = principal
                row.payload = json
                row.endpoint = endpoint
                row.basePayload = baseJSON
                row.baseVersion = base?.version
                if blocked {
                    row.state = .blocked
                    row.lastError = Self.blockedReason
                }
                row.id = try store.insert(row, now: now)
                if base == nil { try placeItemRecords(of: row, json: json, actions: P.listRecordActions, now: now) }
                created(row)
                withRecords { $0.noteRecord(of: row) }
                for placeholder in placeholders {
                    try store.addDependency(item: row.id, placeholder: placeholder, deferrable: deferrable[placeholder] ?? false)
                }
                try store.recordDocument(workspace: workspace, documentID: documentID, digest: digest, item: row.id)
                if placeholders.isEmpty {
                    if !blocked { try store.addToLane(workspace: workspace, lane: lane, head: row.id, due: now) }
                } else {
                    try store.refreshLane(workspace: workspace, lane: lane)
                }
                rescanRequested = true
                observers.signalWork()
                return row.id
            }()
            copiesMade += copies.values.filter { !$0.shared }.map(\.copy.path)
            return id
        } catch {
            for (_, entry) in copies where !entry.shared { stash.remove(entry.copy.path) }
            throw error
        }
    }

    /// Gives every item of the payload's lists that create records a placeholder of its own, so
    /// that each record shows on the device, and can be referenced, before it lands. A payload
    /// replaced before it was sent keeps each position's placeholder; what depended on a
    /// position it no longer has is blocked for a person.
    func placeItemRecords(of row: OutboxStore.Row, json: Data, actions: [ListRecordAction], now: Int64) throws {
        for action in actions {
            let dropped = try store.setItemRecords(
                item: row.id, list: action.list, type: action.recordType, count: RecordProjection.itemCount(form: json, list: action.list),
                mint: { placeholderIDs.next() })
            for placeholder in dropped { try blockDependents(of: placeholder, workspace: row.workspace, now: now) }
        }
    }

    /// Copies an attachment into the stash, through the attachment transform when there is one:
    /// what is measured, digested and uploaded is what the transform made.
    func stashed(_ attachment: Outbox.Attachment) throws -> (attachment: Outbox.Attachment, copy: FileStash.Copy) {
        guard let transform = configuration.attachmentTransform else {
            return (attachment, try stash.store(attachment.source, name: environment.newID()))
        }
        let scratch = stash.scratchPath()
        defer { stash.remove(scratch) }
        var transformed = attachment
        do {
            let (file, contentType) = try transform(attachment.source, attachment.contentType, URL(fileURLWithPath: scratch))
            transformed.source = file
            transformed.contentType = contentType
        } catch {
            throw OutboxError.stashFailed(path: attachment.source.path, reason: "the attachment transform failed: \(error)")
        }
        return (transformed, try stash.store(transformed.source, name: environment.newID()))
    }
}
