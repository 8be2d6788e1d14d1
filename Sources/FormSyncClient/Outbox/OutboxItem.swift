import FormSyncModel
import FormSyncProtocol
import Foundation

/// One item as stored, for lists, badges and the fix-and-resubmit flow.
public struct OutboxItem: Sendable, Equatable, Identifiable {
    /// A form submission, or the upload of one stashed file.
    public enum Kind: String, Sendable, Codable {
        case submission
        case file
    }

    /// The outbox's id, also its enqueue sequence.
    public var id: ItemID
    public var kind: Kind
    public var state: SyncState
    public var documentID: String
    public var attemptID: String
    /// The form's name and spec version (nil for a file).
    public var form: String?
    public var formVersion: Int?
    /// The ordering lane: items of one lane go out one at a time, in enqueue order.
    public var lane: String
    public var workspace: String
    /// On a shared phone, the person who captured it or was handed it: it goes out only under
    /// their credential. Nil when nobody was signed in.
    public var principal: String?
    /// The payload as captured (JSON, placeholders kept), for submissions.
    public var payload: Data?
    /// Counted attempts (auth pauses and lease reclaims are not attempts).
    public var attempts: Int
    /// When the next attempt may start, by the outbox's clock.
    public var nextAttemptAt: Date
    /// Why the last attempt did not land, or why the item is parked.
    public var lastError: String?
    /// The server's field errors, for a rejected submission.
    public var fieldErrors: [FieldError]
    /// For a conflict: the base, and the server's current record and version.
    public var basePayload: Data?
    public var serverPayload: Data?
    public var serverVersion: String?
    /// The fields the merge could not settle.
    public var conflicts: [FieldConflict]
    /// For a conflict: who made the server's version it met, when and through what, as the
    /// server named them ("changed by the dispatcher at 10:42"); nil when it did not say.
    public var lastChange: ChangeAuthor?
    /// The placeholder this item turns into a server id when it lands.
    public var producesPlaceholder: Int64?
    /// The server's id once acknowledged.
    public var serverID: Int64?

    /// Decodes the stored payload as the form type it was captured with.
    public func decodedPayload<P: FormPayload>(as type: P.Type) throws -> P? {
        guard let payload else { return nil }
        return try JSONDecoder().decode(P.self, from: payload)
    }
}

extension OutboxItem {
    /// A stored row as apps see it, in `state`.
    init(_ row: OutboxStore.Row, state: SyncState) {
        let decoder = JSONDecoder()
        self.init(
            id: ItemID(row.id), kind: row.kind, state: state, documentID: row.documentID, attemptID: row.attemptID,
            form: row.form, formVersion: row.formVersion, lane: row.lane, workspace: row.workspace, principal: row.principal,
            payload: row.payload,
            attempts: row.attempts, nextAttemptAt: Date(millisecondsSince1970: row.nextAttemptAt), lastError: row.lastError,
            fieldErrors: row.fieldErrors.flatMap { try? decoder.decode([FieldError].self, from: $0) } ?? [],
            basePayload: row.basePayload, serverPayload: row.serverPayload, serverVersion: row.serverVersion,
            conflicts: row.conflicts.flatMap { try? decoder.decode([FieldConflict].self, from: $0) } ?? [],
            lastChange: row.lastChange.flatMap { try? decoder.decode(ChangeAuthor.self, from: $0) },
            producesPlaceholder: row.produces, serverID: row.serverID)
    }
}
