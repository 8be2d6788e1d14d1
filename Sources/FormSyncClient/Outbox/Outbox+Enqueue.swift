import Foundation
import FormSyncModel
import FormSyncSQLite

extension Outbox {
    // MARK: Enqueue

    /// Validates `payload`, copies its attachments into the stash, and commits it (and one upload
    /// item per attachment) durably. Returns only after the commit: from then on it survives
    /// the app being killed and the power failing.
    ///
    /// - Parameters:
    ///   - documentID: the document's stable identity; minted when nil.
    ///   - creates: the placeholder id that stands for the record this submission creates, so
    ///     that later submissions can reference it before it lands.
    ///   - base: for an edit, the record as last read from the server and its version
    ///     (`If-Match`); a stale base comes back as a conflict and is merged.
    /// - Returns: the item's id.
    @discardableResult
    public func enqueue<P: FormPayload>(
        _ payload: P, attachments: [Attachment] = [], documentID: String? = nil, creates: Int64? = nil,
        base: (payload: P, version: String)? = nil
    ) throws -> Int64 {
        let errors = payload.validate()
        guard errors.isEmpty else { throw OutboxError.invalidPayload(errors) }
        guard registry[P.formName] != nil else { throw OutboxError.unknownForm(P.formName) }
        let json = try encode(payload)
        let baseJSON = try base.map { try encode($0.payload) }
        let now = environment.now()
        let attached = Dictionary(attachments.map { ($0.placeholder, $0) }, uniquingKeysWith: { a, _ in a })
        let placeholders = payload.placeholders
        let blocked = try storage { try checkDependencies(placeholders.filter { attached[$0] == nil }) }

        var copies: [(Attachment, FileStash.Copy)] = []
        do {
            for attachment in attachments where placeholders.contains(attachment.placeholder) {
                copies.append((attachment, try stash.store(attachment.source, name: environment.newID())))
            }
            let documentID = documentID ?? environment.newID()
            let laneName = payload.lane ?? "document:\(documentID)"
            return try write(.full) {
                for (attachment, copy) in copies {
                    let row = newRow(kind: .file, lane: "file:\(attachment.placeholder)", documentID: environment.newID(), now: now,
                                     produces: attachment.placeholder)
                    var file = row
                    file.filePath = copy.path
                    file.contentType = attachment.contentType
                    file.byteCount = copy.byteCount
                    file.sha256 = copy.sha256
                    file.id = try store.insert(file, now: now)
                    record(file.id, workspace, from: nil, to: .pending)
                    try store.refreshLane(workspace: workspace, lane: file.lane)
                }
                var row = newRow(kind: .submission, lane: laneName, documentID: documentID, now: now, produces: creates)
                row.form = P.formName
                row.formVersion = P.formVersion
                row.payload = json
                row.endpoint = placeholders.isEmpty ? payload.endpoint : nil
                row.basePayload = baseJSON
                row.baseVersion = base?.version
                if blocked { row.state = .blocked }
                row.id = try store.insert(row, now: now)
                record(row.id, workspace, from: nil, to: row.state)
                for placeholder in placeholders { try store.addDependency(item: row.id, placeholder: placeholder) }
                try store.refreshLane(workspace: workspace, lane: laneName)
                rescanRequested = true
                return row.id
            }
        } catch {
            for (_, copy) in copies { stash.remove(copy.path) }
            throw error
        }
    }

    /// Enqueues, then waits up to `timeout` for the item's first attempt, so that the server's
    /// field errors reach the form while the person is still on it. Durable first in every case.
    public func submit<P: FormPayload>(
        _ payload: P, attachments: [Attachment] = [], documentID: String? = nil, creates: Int64? = nil,
        base: (payload: P, version: String)? = nil, timeout: Duration
    ) async throws -> SubmitResult {
        let id = try enqueue(payload, attachments: attachments, documentID: documentID, creates: creates, base: base)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<SubmitResult?, Never>) in
            waiters[id, default: []].append(continuation)
            Task { _ = await self.flush() }
            Task {
                try? await Task.sleep(for: timeout)
                self.resumeWaiters(id, with: nil)
            }
        }
        if let result { return result }
        return .queued(id: id, state: (try? item(id)?.state) ?? .savedOnDevice)
    }

    func resumeWaiters(_ id: Int64, with result: SubmitResult?) {
        for waiter in waiters.removeValue(forKey: id) ?? [] { waiter.resume(returning: result) }
    }

    func newRow(kind: OutboxItem.Kind, lane: String, documentID: String, now: Int64, produces: Int64?) -> OutboxStore.Row {
        OutboxStore.Row(
            id: 0, kind: kind, workspace: workspace, lane: lane, documentID: documentID, attemptID: environment.newID(),
            form: nil, formVersion: nil, payload: nil, basePayload: nil, baseVersion: nil, produces: produces, serverID: nil,
            serverVersion: nil, filePath: nil, contentType: nil, byteCount: nil, sha256: nil, state: .pending, attempts: 0,
            nextAttemptAt: now, leaseExpiresAt: nil, lastError: nil, fieldErrors: nil, serverPayload: nil, conflicts: nil,
            endpoint: nil)
    }

    func encode<T: Encodable>(_ value: T) throws -> Data {
        do {
            return try FormRegistry.encode(value)
        } catch {
            throw OutboxError.invalidPayload([FieldError(pointer: JSONPointer.root, code: "invalid", detail: "The payload cannot be encoded: \(error)")])
        }
    }
}
