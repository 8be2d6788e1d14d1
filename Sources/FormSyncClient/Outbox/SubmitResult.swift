import FormSyncModel

/// The fast path's answer: what became of the first attempt of an item just enqueued, so that a
/// form can show the server's field errors while the person is still on it. The item is stored
/// durably in every case.
public enum SubmitResult: Sendable, Equatable {
    /// The server acknowledged it.
    case confirmed(id: ItemID, ServerAcknowledgement)
    /// The server refused it: its field errors, to show inline. It is parked in the outbox.
    case rejected(id: ItemID, reason: String, fieldErrors: [FieldError])
    /// Not settled within the time given (offline, retrying, waiting on files); it stays queued.
    case queued(id: ItemID, state: SyncState)
}
