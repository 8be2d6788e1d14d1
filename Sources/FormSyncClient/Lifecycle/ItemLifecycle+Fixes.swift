import FormSyncModel
import Foundation

extension ItemLifecycle {
    /// A person's answer to a parked item.
    enum Fix {
        /// Send it again as it is (same attempt identity).
        case retry
        /// Send this payload instead: same document, new attempt identity.
        case resubmit(PreparedFix)
        /// Settle a conflict with this payload, sent as an edit of the server's current record.
        case resolveConflict(PreparedFix)

        var action: String {
            switch self {
            case .retry: return "retry"
            case .resubmit: return "resubmit"
            case .resolveConflict: return "resolve a conflict of"
            }
        }
    }

    /// A fixed payload, validated and encoded.
    struct PreparedFix {
        var form: String
        var version: Int
        var json: Data
        var placeholders: [Int64]
        /// Its endpoint, when it names no placeholder (otherwise resolved at send).
        var endpoint: String?

        init<P: FormPayload>(_ payload: P) throws {
            let payload = payload.recalculated()
            let errors = payload.validate()
            guard errors.isEmpty else { throw OutboxError.invalidPayload(errors) }
            form = P.formName
            version = P.formVersion
            json = try PreparedPayload.encode(payload)
            placeholders = payload.placeholders
            endpoint = placeholders.isEmpty ? payload.endpoint : nil
        }
    }

    /// Applies a person's fix to parked item `id` inside the caller's transaction, and reopens
    /// it with a fresh attempt budget (blocked while a dependency still needs attention).
    func apply(_ fix: Fix, to id: ItemID, now: Int64) throws {
        var row = try existing(id)
        let allowed: Bool
        switch fix {
        case .retry: allowed = [.rejected, .conflict, .exhausted].contains(row.state)
        case .resubmit: allowed = row.kind == .submission && [.rejected, .conflict, .exhausted].contains(row.state)
        case .resolveConflict: allowed = row.state == .conflict
        }
        guard allowed else { throw OutboxError.notAllowed(id: id, state: publicState(row), action: fix.action) }
        switch fix {
        case .retry:
            break
        case .resubmit(let fixed):
            try replace(&row, with: fixed)
            let digest = PreparedPayload.digest(form: fixed.form, version: fixed.version, baseVersion: row.baseVersion, payload: fixed.json)
            try store.recordDocument(workspace: row.workspace, documentID: row.documentID, digest: digest, item: row.id)
            row.formVersion = fixed.version
        case .resolveConflict(let fixed):
            try replace(&row, with: fixed)
            if let server = row.serverPayload {
                row.basePayload = server
                row.baseVersion = row.serverVersion
            }
            row.serverPayload = nil
            row.conflicts = nil
            row.lastChange = nil
        }
        try reopen(&row, now: now)
    }

    private func replace(_ row: inout OutboxStore.Row, with fixed: PreparedFix) throws {
        guard row.form == fixed.form else { throw OutboxError.formMismatch(expected: row.form ?? "file", got: fixed.form) }
        try replaceDependencies(of: row.id, with: fixed.placeholders)
        // A fix of a create that never landed keeps one record per item; one that landed is an
        // edit of the document, and its lists' records are records in their own right.
        if row.serverID == nil, let actions = registry[fixed.form]?.listRecordActions, !actions.isEmpty {
            try placeItemRecords(of: row, json: fixed.json, actions: actions, now: environment.now())
        }
        row.payload = fixed.json
        row.endpoint = fixed.endpoint
        row.attemptID = environment.newID()
    }

    /// The stored states that hold items shown in `states`.
    static func storedStates(showing states: Set<SyncState>) -> [State] {
        Set(
            states.map { state -> State in
                switch state {
                case .savedOnDevice, .waitingForNetwork, .waitingForUnmeteredNetwork, .waitingForItsOwner: return .pending
                case .sending, .sent: return .leased
                case .confirmed: return .confirmed
                case .rejected: return .rejected
                case .conflict: return .conflict
                case .exhausted: return .exhausted
                case .blocked: return .blocked
                case .sealed: return .sealed
                }
            }
        ).sorted { $0.rawValue < $1.rawValue }
    }
}
