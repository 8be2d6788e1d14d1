import FormSyncModel
import FormSyncProtocol
import Foundation

/// Builds a support bundle (`SupportBundle`) from an outbox's tables: what the app's own
/// `Outbox.supportBundle` and `formsync outbox inspect --bundle` both give. It reads; it holds no
/// token (an outbox never stores one) and no file bytes, and payloads only when asked.
struct SupportBundleBuilder {
    let store: OutboxStore
    /// How a stored state shows (the outbox knows more than the tables: items on the wire, the
    /// network's state).
    let state: (OutboxStore.Row) -> SyncState
    /// How a stored state counts.
    let countedAs: (OutboxStore.State) -> SyncState

    func bundle(
        device: DeviceReport?, answering: Int64?, includePayloads: Bool, settings: [String: String], now: Date
    ) throws -> SupportBundle {
        let counts = try store.counts()
        let workspaces = try store.workspaceNames(counts: counts)
        var byState: [String: Int] = [:]
        for stateCounts in counts.values {
            for (state, count) in stateCounts where count > 0 { byState[countedAs(state).rawValue, default: 0] += count }
        }
        let records = try store.recordCount(workspace: nil)
        let all = try workspaces.flatMap {
            try store.items(workspace: $0, states: [.pending, .leased, .confirmed, .rejected, .conflict, .exhausted, .blocked, .sealed])
        }
        // Every item a person has to act on (or that is kept sealed), then the newest others.
        let mustShow = all.filter { [.rejected, .conflict, .exhausted, .blocked, .sealed].contains($0.state) }
        let others = all.filter { ![.rejected, .conflict, .exhausted, .blocked, .sealed].contains($0.state) }.sorted { $0.id > $1.id }
        let chosen = (mustShow.sorted { $0.id > $1.id } + others).prefix(SupportBundle.maxItems).sorted { $0.id < $1.id }
        let decoder = JSONDecoder()
        let items = try chosen.map { row in
            SupportBundle.Item(
                id: row.id, workspace: row.workspace, principal: row.principal, kind: row.kind.rawValue, form: row.form,
                formVersion: row.formVersion, state: state(row).rawValue, attempts: row.attempts, lastError: row.lastError,
                documentID: row.documentID, lane: row.lane,
                fieldErrors: (row.fieldErrors.flatMap { try? decoder.decode([FieldError].self, from: $0) } ?? []).map {
                    "\($0.pointer): \($0.detail)"
                },
                history: try store.attempts(of: row.id).map {
                    SupportBundle.Attempt(
                        at: Self.timestamp($0.at), outcome: $0.outcome, status: $0.status, reason: $0.reason,
                        milliseconds: $0.duration.components.seconds * 1000 + $0.duration.components.attoseconds / 1_000_000_000_000_000)
                },
                payload: includePayloads ? row.payload.map { String(decoding: $0, as: UTF8.self) } : nil)
        }
        var allSettings = settings
        if let limit = store.meteredFileLimit { allSettings["metered_file_limit"] = String(limit) }
        return SupportBundle(
            createdAt: Self.timestamp(now), answering: answering, device: device, outboxSchema: OutboxMigrations.all.latestVersion,
            workspaces: workspaces, counts: byState, recordsHeld: records, settings: allSettings,
            people: try store.people().map { SupportBundle.Person(principal: $0.principal, signedIn: $0.present, current: $0.current) },
            revoked: try store.revocation()?.reason, includesPayloads: includePayloads, items: items)
    }

    static func timestamp(_ date: Date) -> String {
        InternetTime.string(date, fractionalSeconds: true)
    }
}
