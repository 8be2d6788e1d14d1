import FormSyncModel
import Foundation

extension Outbox {
    // MARK: Enqueue

    /// Recalculates `payload` (its calculated fields set, the fields that do not apply cleared:
    /// `recalculated()`), validates it, copies its attachments into the stash (measuring each copy and
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
        let payload = payload.recalculated()
        // Validating, encoding and digesting need nothing of the actor's: done here, they run
        // beside other enqueues' commits instead of in the actor's queue.
        let prepared = try PreparedPayload(payload, base: base)
        let saved = try await saveCommitted(
            payload, attachments: attachments, documentID: documentID, creates: creates, base: base, prepared: prepared)
        // Waited for here, off the outbox's thread: the answer comes back to the caller's
        // thread without passing through the outbox's.
        if saved.pending > 0 { try await database.durable(through: saved.pending, alone: false) }
        return ItemID(saved.id)
    }

    /// `enqueue` on the actor (what `edit` and `submit` call), from a payload prepared before
    /// the hop when there is one.
    func save<P: FormPayload>(
        _ payload: P, attachments: [Attachment] = [], documentID: String? = nil, creates: Int64? = nil,
        base: (payload: P, version: String)? = nil
    ) async throws -> Int64 {
        let saved = try await saveCommitted(
            payload.recalculated(), attachments: attachments, documentID: documentID, creates: creates, base: base)
        if saved.pending > 0 { try await database.durable(through: saved.pending, alone: false) }
        return saved.id
    }

    /// `save` up to its commit: the fsync it needs, if any, is the caller's to wait for.
    func saveCommitted<P: FormPayload>(
        _ payload: P, attachments: [Attachment] = [], documentID: String? = nil, creates: Int64? = nil,
        base: (payload: P, version: String)? = nil, prepared: PreparedPayload? = nil
    ) async throws -> GroupCommit.Saved {
        let prepared = try prepared ?? PreparedPayload(payload, base: base)
        guard registry[P.formName] != nil else { throw OutboxError.unknownForm(P.formName) }
        // Once means once: a document already stored with these bytes is that item, found
        // without a transaction. The save that stored it may still wait for its fsync: this
        // one waits for it too, so that nothing is reported saved before it is on disk.
        if let documentID,
            let existing = try storage({ try store.documentItem(workspace: workspace, documentID: documentID, digest: prepared.digest) })
        {
            return GroupCommit.Saved(id: existing, pending: groupCommit.lastSaveCommit)
        }
        let saved = try await groupCommit.save { [lifecycle] copiesMade in
            try lifecycle.capture(
                payload, attachments: attachments, documentID: documentID, creates: creates, base: base, prepared: prepared,
                copiesMade: &copiesMade)
        }
        // A capture after the device was revoked is kept, sealed with the rest: never sent.
        if lifecycle.revocationReason != nil { try sealUnsent() }
        return saved
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
