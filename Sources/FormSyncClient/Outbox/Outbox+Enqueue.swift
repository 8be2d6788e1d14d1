import Foundation
import FormSyncModel

extension Outbox {
    // MARK: Enqueue

    /// Validates `payload`, copies its attachments into the stash (measuring each copy and
    /// validating `max_bytes` and `content_types` against what was really copied), and commits
    /// it (and one upload item per attachment) durably. Returns only after the commit is on
    /// disk: from then on it survives the app being killed and the power failing. Enqueues
    /// from concurrent tasks share one fsync (group commit), each still waiting for its own.
    ///
    /// Once means once: the same document with an identical payload returns the item that
    /// already holds it (even after it was confirmed and purged); a new payload for a document
    /// whose earlier submission never left the device replaces that submission (one write
    /// reaches the server, against the earliest base); one whose earlier submission is already
    /// on its way queues behind it in the same lane.
    ///
    /// - Parameters:
    ///   - documentID: the document's stable identity; minted when nil.
    ///   - creates: the placeholder id that stands for the record this submission creates, so
    ///     that later submissions can reference it before it lands.
    ///   - base: for an edit, the record as last read from the server and its version
    ///     (`If-Match`); a stale base comes back as a conflict and is merged.
    /// - Returns: the item's id.
    @discardableResult
    public nonisolated func enqueue<P: FormPayload>(
        _ payload: P, attachments: [Attachment] = [], documentID: String? = nil, creates: Int64? = nil,
        base: (payload: P, version: String)? = nil
    ) async throws -> ItemID {
        // Callers are counted before they queue on the actor: an enqueue that finds others
        // waiting shares their fsync; one alone fsyncs at once (no hop to another thread).
        enqueueCallers.value.add(1, ordering: .relaxed)
        defer { enqueueCallers.value.subtract(1, ordering: .relaxed) }
        // Validating, encoding and digesting need nothing of the actor's: done here, they run
        // beside other enqueues' commits instead of in the actor's queue.
        let prepared = try PreparedPayload(payload, base: base)
        let saved = try await saveCommitted(payload, attachments: attachments, documentID: documentID, creates: creates, base: base, prepared: prepared)
        // Waited for here, off the outbox's thread: the answer comes back to the caller's
        // thread without passing through the outbox's.
        if saved.pending > 0 { try await database.durable(through: saved.pending, alone: false) }
        return ItemID(saved.id)
    }

    /// A committed enqueue: its item, and the commit its caller must see durable before it
    /// reports the item saved (0 when it already is).
    struct Saved: Sendable {
        var id: Int64
        var pending: UInt64
    }

    /// `enqueue` on the actor (what `edit` and `submit` call), from a payload prepared before
    /// the hop when there is one.
    func save<P: FormPayload>(
        _ payload: P, attachments: [Attachment] = [], documentID: String? = nil, creates: Int64? = nil,
        base: (payload: P, version: String)? = nil
    ) async throws -> Int64 {
        let saved = try await saveCommitted(payload, attachments: attachments, documentID: documentID, creates: creates, base: base)
        if saved.pending > 0 { try await database.durable(through: saved.pending, alone: false) }
        return saved.id
    }

    /// `save` up to its commit: the fsync it needs, if any, is the caller's to wait for.
    func saveCommitted<P: FormPayload>(
        _ payload: P, attachments: [Attachment] = [], documentID: String? = nil, creates: Int64? = nil,
        base: (payload: P, version: String)? = nil, prepared: PreparedPayload? = nil
    ) async throws -> Saved {
        let prepared = try prepared ?? PreparedPayload(payload, base: base)
        guard registry[P.formName] != nil else { throw OutboxError.unknownForm(P.formName) }
        // Once means once: a document already stored with these bytes is that item, found
        // without a transaction. The save that stored it may still wait for its fsync: this
        // one waits for it too, so that nothing is reported saved before it is on disk.
        if let documentID, let existing = try storage({ try store.documentItem(workspace: workspace, documentID: documentID, digest: prepared.digest) }) {
            return Saved(id: existing, pending: lastSaveCommit)
        }
        return try await saveDurably { [self] copiesMade in
            try saveInTransaction(payload, attachments: attachments, documentID: documentID, creates: creates, base: base, prepared: prepared, copiesMade: &copiesMade)
        }
    }

    /// An enqueue's writes, inside the transaction `saveDurably` opened for it: what it reads
    /// (an earlier submission of the document, known placeholders) includes every enqueue
    /// committed or batched before it. Appends the stash copies it made to `copiesMade`, which are
    /// removed if the transaction does not commit; removes them itself when it throws.
    func saveInTransaction<P: FormPayload>(
        _ payload: P, attachments: [Attachment], documentID: String?, creates: Int64?,
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
        if known, let existing = try storage({ try store.documentItem(workspace: workspace, documentID: documentID, digest: digest) }) {
            return existing
        }
        let earlier = known ? try storage { try store.latestDocumentItem(workspace: workspace, documentID: documentID) } : nil
        // A form that creates a record always stands for it under a placeholder id, so the
        // record shows on the device (and can be referenced and edited) before it lands.
        // (A later write to a document already sent is an edit of it, and creates nothing.)
        let creates = creates ?? { () -> Int64? in
            guard P.recordAction?.kind == .creates, base == nil else { return nil }
            guard let earlier else { return placeholderIDs.next() }
            return (earlier.state == .pending || earlier.state == .blocked) && earlier.sends == 0 ? earlier.produces : nil
        }()
        let attached = Dictionary(attachments.map { ($0.placeholder, $0) }, uniquingKeysWith: { a, _ in a })
        let placeholders = payload.placeholders
        let fresh = try storage { try attached.keys.filter { try placeholders.contains($0) && !isKnown($0) } }
        let blocked = try storage { try checkDependencies(placeholders.filter { !fresh.contains($0) }) }

        var copies: [Int64: (attachment: Attachment, copy: FileStash.Copy)] = [:]
        do {
            for attachment in attachments where fresh.contains(attachment.placeholder) && copies[attachment.placeholder] == nil {
                copies[attachment.placeholder] = try stashed(attachment)
            }
            var stored = payload
            var declaredTypes: [Int64: String] = [:]
            if !copies.isEmpty {
                stored = payload.mappingFiles { ref in
                    guard let (attachment, copy) = copies[ref.id] else { return ref }
                    let type = attachment.contentType ?? ref.contentType
                    declaredTypes[ref.id] = type
                    return FileRef(id: ref.id, byteCount: copy.byteCount, contentType: type)
                }
                let measured = stored.validate()
                guard measured.isEmpty else { throw OutboxError.invalidPayload(measured) }
                json = try PreparedPayload.encode(stored)
            }
            let endpoint = placeholders.isEmpty ? stored.endpoint : nil
            if !copies.isEmpty { CrashPoint.stashCopied.reach() }
            let id = try { () throws -> Int64 in
                for placeholder in placeholders {
                    guard let (attachment, copy) = copies[placeholder] else { continue }
                    var file = OutboxStore.Row.new(kind: .file, workspace: workspace, lane: "file:\(placeholder)", documentID: environment.newID(), attemptID: environment.newID(), now: now, produces: placeholder)
                    file.filePath = copy.path
                    file.contentType = declaredTypes[placeholder] ?? attachment.contentType
                    file.byteCount = copy.byteCount
                    file.sha256 = copy.sha256
                    file.id = try store.insert(file, now: now)
                    record(file.id, workspace, from: nil, to: .pending)
                    try store.addToLane(workspace: workspace, lane: file.lane, head: file.id, due: now)
                }
                if var replaced = earlier, replaced.kind == .submission, replaced.form == P.formName,
                    replaced.state == .pending || replaced.state == .blocked, replaced.sends == 0, !inFlight.contains(replaced.id),
                    creates == nil || creates == replaced.produces
                {
                    try store.forgetDocumentDigests(item: replaced.id, workspace: workspace, documentID: documentID)
                    replaced.payload = json
                    replaced.formVersion = P.formVersion
                    replaced.endpoint = endpoint
                    replaced.attemptID = environment.newID()
                    try replaceDependencies(of: replaced.id, with: placeholders)
                    try store.recordDocument(workspace: workspace, documentID: documentID, digest: digest, item: replaced.id)
                    try reopen(&replaced, now: now)
                    withRecords { $0.noteRecord(of: replaced) }
                    return replaced.id
                }
                let lane = try earlier.flatMap { $0.state == .pending || $0.state == .leased ? $0.lane : nil } ?? payload.lane.map { try store.entityLane($0, workspace: workspace) } ?? "document:\(documentID)"
                var row = OutboxStore.Row.new(kind: .submission, workspace: workspace, lane: lane, documentID: documentID, attemptID: environment.newID(), now: now, produces: creates)
                row.form = P.formName
                row.formVersion = P.formVersion
                row.payload = json
                row.endpoint = endpoint
                row.basePayload = baseJSON
                row.baseVersion = base?.version
                if blocked {
                    row.state = .blocked
                    row.lastError = Self.blockedReason
                }
                row.id = try store.insert(row, now: now)
                record(row.id, workspace, from: nil, to: row.state)
                withRecords { $0.noteRecord(of: row) }
                for placeholder in placeholders { try store.addDependency(item: row.id, placeholder: placeholder) }
                try store.recordDocument(workspace: workspace, documentID: documentID, digest: digest, item: row.id)
                if placeholders.isEmpty {
                    if !blocked { try store.addToLane(workspace: workspace, lane: lane, head: row.id, due: now) }
                } else {
                    try store.refreshLane(workspace: workspace, lane: lane)
                }
                rescanRequested = true
                signalWork()
                return row.id
            }()
            copiesMade += copies.values.map(\.copy.path)
            return id
        } catch {
            for (_, entry) in copies { stash.remove(entry.copy.path) }
            throw error
        }
    }

    /// One enqueue waiting in a batch for the transaction its leader runs.
    final class SaveRequest {
        let body: (inout [String]) throws -> Int64
        var stashed: [String] = []
        var continuation: CheckedContinuation<Saved, any Error>?

        init(body: @escaping (inout [String]) throws -> Int64) { self.body = body }
    }

    /// Runs an enqueue's writes (`saveInTransaction`) in a durable commit. Alone, it has a
    /// transaction of its own and returns once its fsync (run right here) is done. With other
    /// enqueues under way, it joins a batch: the first of them lets the ones queued behind it
    /// on the actor join, then runs them all in one transaction, each in a savepoint of its own
    /// (one that fails is undone alone and gets its own error); each caller then waits for the
    /// one fsync that covers the batch (`Saved.pending`), off the outbox's thread. The pages they share (the table's last page,
    /// the index pages, the lane) then go to the log once per batch instead of once per enqueue.
    func saveDurably(_ body: @escaping (inout [String]) throws -> Int64) async throws -> Saved {
        guard enqueueCallers.value.load(ordering: .relaxed) > 1 else {
            var stashed: [String] = []
            do {
                return Saved(id: try await writeDurably { try body(&stashed) }, pending: 0)
            } catch {
                for path in stashed { stash.remove(path) }
                throw error
            }
        }
        let request = SaveRequest(body: body)
        saveBatch.append(request)
        guard saveBatch.count == 1 else {
            // The batch's first enqueue is letting the others join; it runs this one too.
            return try await withCheckedThrowingContinuation { request.continuation = $0 }
        }
        await Task.yield()
        let batch = saveBatch
        saveBatch = []
        let results = await commit(batch)
        for (request, result) in zip(batch, results).dropFirst() { request.continuation?.resume(with: result) }
        return try results[0].get()
    }

    /// Commits a batch of enqueues in one transaction: each one's item and the commit to wait
    /// for, or its error (its own, or the batch's when the batch did not commit; their stash
    /// copies are then removed).
    private func commit(_ batch: [SaveRequest]) async -> [Result<Saved, any Error>] {
        var results: [Result<Int64, any Error>] = []
        do {
            let (_, pending) = try await writeDeferringSync {
                for request in batch {
                    let marks = (changes: uncommitted.count, notices: withRecords { $0.notices })
                    let result = try database.savepoint { try request.body(&request.stashed) }
                    if case .failure = result {
                        uncommitted.removeSubrange(marks.changes...)
                        withRecords { $0.notices = marks.notices }
                    }
                    results.append(result)
                }
            }
            return results.map { $0.map { Saved(id: $0, pending: pending) } }
        } catch {
            for request in batch { for path in request.stashed { stash.remove(path) } }
            return batch.indices.map { index in
                if index < results.count, case .failure(let own) = results[index] { return .failure(own) }
                return .failure(error)
            }
        }
    }

    /// Copies an attachment into the stash, through the attachment transform when there is one:
    /// what is measured, digested and uploaded is what the transform made.
    func stashed(_ attachment: Attachment) throws -> (attachment: Attachment, copy: FileStash.Copy) {
        guard let transform = configuration.attachmentTransform else { return (attachment, try stash.store(attachment.source, name: environment.newID())) }
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

    /// Enqueues, then waits up to `timeout` for the item's first attempt, so that the server's
    /// field errors reach the form while the person is still on it. Durable first in every case.
    public func submit<P: FormPayload>(
        _ payload: P, attachments: [Attachment] = [], documentID: String? = nil, creates: Int64? = nil,
        base: (payload: P, version: String)? = nil, timeout: Duration
    ) async throws -> SubmitResult {
        let id = try await save(payload, attachments: attachments, documentID: documentID, creates: creates, base: base)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<SubmitResult?, Never>) in
            waiters[id, default: []].append(continuation)
            Task { _ = await self.flush() }
            Task {
                try? await Task.sleep(for: timeout)
                self.resumeWaiters(id, with: nil)
            }
        }
        if let result { return result }
        return .queued(id: ItemID(id), state: (try? item(ItemID(id))?.state) ?? .savedOnDevice)
    }

    func resumeWaiters(_ id: Int64, with result: SubmitResult?) {
        for waiter in waiters.removeValue(forKey: id) ?? [] { waiter.resume(returning: result) }
    }
}
