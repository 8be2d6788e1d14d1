import Foundation
import FormSyncModel

extension Outbox {
    // MARK: Parked items

    /// Items a person has to act on in the current workspace: rejected, conflict, exhausted, blocked.
    public func parkedItems() throws -> [OutboxItem] {
        try items(in: [.rejected, .conflict, .exhausted, .blocked])
    }

    /// Items of the current workspace in the given states, in enqueue order.
    public func items(in states: Set<SyncState>) throws -> [OutboxItem] {
        var stored: Set<State> = []
        for state in states {
            switch state {
            case .savedOnDevice, .waitingForNetwork: stored.insert(.pending)
            case .sending, .sent: stored.insert(.leased)
            case .confirmed: stored.insert(.confirmed)
            case .rejected: stored.insert(.rejected)
            case .conflict: stored.insert(.conflict)
            case .exhausted: stored.insert(.exhausted)
            case .blocked: stored.insert(.blocked)
            }
        }
        let rows = try storage { try store.items(workspace: workspace, states: stored.sorted { $0.rawValue < $1.rawValue }) }
        return rows.map(publicItem).filter { states.contains($0.state) }
    }

    /// One item of the current workspace by id; nil when there is none, `otherWorkspace` when
    /// it belongs to another workspace.
    public func item(_ id: ItemID) throws -> OutboxItem? {
        do {
            return publicItem(try storage { try existing(id) })
        } catch OutboxError.noSuchItem {
            return nil
        }
    }

    /// Sends a parked item again as it is (same attempt identity), with a fresh attempt budget.
    public func retry(_ id: ItemID) throws {
        let now = environment.now()
        try write(.full) {
            var row = try existing(id)
            guard [.rejected, .conflict, .exhausted].contains(row.state) else {
                throw OutboxError.notAllowed(id: id, state: publicState(row), action: "retry")
            }
            try reopen(&row, now: now)
        }
    }

    /// Replaces a parked submission's payload with a fixed one: same document identity, new
    /// attempt identity. The fixed payload is validated first.
    public func resubmit<P: FormPayload>(_ id: ItemID, with fixed: P) throws {
        let errors = fixed.validate()
        guard errors.isEmpty else { throw OutboxError.invalidPayload(errors) }
        let json = try PreparedPayload.encode(fixed)
        let now = environment.now()
        try write(.full) {
            var row = try existing(id)
            guard row.kind == .submission, [.rejected, .conflict, .exhausted].contains(row.state) else {
                throw OutboxError.notAllowed(id: id, state: publicState(row), action: "resubmit")
            }
            guard row.form == P.formName else { throw OutboxError.formMismatch(expected: row.form ?? "file", got: P.formName) }
            try replaceDependencies(of: row.id, with: fixed.placeholders)
            let digest = PreparedPayload.digest(form: P.formName, version: P.formVersion, baseVersion: row.baseVersion, payload: json)
            try store.recordDocument(workspace: row.workspace, documentID: row.documentID, digest: digest, item: row.id)
            row.payload = json
            row.formVersion = P.formVersion
            row.endpoint = fixed.placeholders.isEmpty ? fixed.endpoint : nil
            row.attemptID = environment.newID()
            try reopen(&row, now: now)
        }
    }

    /// Settles a conflict with the payload a person chose: it is sent as an edit of the server's
    /// current record (its version becomes the base), under a new attempt identity.
    public func resolveConflict<P: FormPayload>(_ id: ItemID, with merged: P) throws {
        let errors = merged.validate()
        guard errors.isEmpty else { throw OutboxError.invalidPayload(errors) }
        let json = try PreparedPayload.encode(merged)
        let now = environment.now()
        try write(.full) {
            var row = try existing(id)
            guard row.state == .conflict else { throw OutboxError.notAllowed(id: id, state: publicState(row), action: "resolve a conflict of") }
            guard row.form == P.formName else { throw OutboxError.formMismatch(expected: row.form ?? "file", got: P.formName) }
            try replaceDependencies(of: row.id, with: merged.placeholders)
            row.payload = json
            row.endpoint = merged.placeholders.isEmpty ? merged.endpoint : nil
            if let server = row.serverPayload {
                row.basePayload = server
                row.baseVersion = row.serverVersion
            }
            row.serverPayload = nil
            row.conflicts = nil
            row.attemptID = environment.newID()
            try reopen(&row, now: now)
        }
    }

    /// Removes a parked or blocked item for good. Anything that depends on it stays blocked
    /// until it is discarded too. Pending and in-flight items cannot be discarded.
    public func discard(_ id: ItemID) throws {
        let now = environment.now()
        let path = try write(.full) { () throws -> String? in
            var row = try existing(id)
            guard Self.isStuck(row.state) else { throw OutboxError.notAllowed(id: id, state: publicState(row), action: "discard") }
            if let placeholder = row.produces { try blockDependents(of: placeholder, workspace: row.workspace, now: now) }
            try store.forgetDocumentDigests(item: row.id, workspace: row.workspace, documentID: row.documentID)
            let path = row.filePath
            let workspace = row.workspace
            try move(&row, to: nil)
            try store.delete(row.id)
            try store.refreshLane(workspace: workspace, lane: row.lane)
            return path
        }
        if let path { stash.remove(path) }
    }

    /// Forgets confirmed items of the current workspace acknowledged before `cutoff` (by the
    /// outbox's clock): the server holds them, so only their local record goes, and the database stops
    /// growing. Server ids of landed placeholders stay recorded, so later submissions that
    /// reference them still resolve. Returns how many items were removed.
    @discardableResult
    public func purgeConfirmed(acknowledgedBefore cutoff: Date) throws -> Int {
        let workspace = self.workspace
        let cutoff = cutoff.millisecondsSince1970
        let removed = try write(.normal) { try store.deleteConfirmed(workspace: workspace, before: cutoff) }
        counts[workspace, default: [:]][.confirmed, default: 0] -= removed
        emitSnapshot(changed: nil)
        return removed
    }

    /// Back to pending with a fresh attempt budget; blocked if a dependency still needs attention.
    func reopen(_ row: inout OutboxStore.Row, now: Int64) throws {
        row.attempts = 0
        row.nextAttemptAt = now
        row.lastError = nil
        row.fieldErrors = nil
        try move(&row, to: try dependencyProblem(row.id, workspace: row.workspace) ? .blocked : .pending)
        try store.update(row, now: now)
        try store.refreshLane(workspace: row.workspace, lane: row.lane)
        if let placeholder = row.produces, row.state == .pending { try releaseDependents(of: placeholder, workspace: row.workspace, now: now) }
        rescanRequested = true
        signalWork()
    }
}
