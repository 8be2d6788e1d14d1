import FormSyncModel

/// Why an outbox call did not do what was asked. Nothing is half-stored when one is thrown.
public enum OutboxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The payload breaks its form's rules; nothing was queued.
    case invalidPayload([FieldError])
    /// The form is not registered with this outbox.
    case unknownForm(String)
    /// The payload holds a placeholder that no attachment, queued item or landed item provides.
    case unknownPlaceholder(Int64)
    /// An attachment could not be copied into the stash (missing source, disk full, …).
    case stashFailed(path: String, reason: String)
    /// The database refused the read or the write.
    case storage(StorageFailure)
    /// The write reached the database but the disk refused to make it durable (a failed
    /// fsync): it may not survive a power loss, and every later save fails the same way until
    /// the outbox is reopened (SQLite then recovers what really reached the disk). The one
    /// exception to "nothing is half-stored": the item may be there, so re-enqueue it under the
    /// same document id (once means once) rather than as a new one.
    case notDurable(reason: String)
    /// No item with this id.
    case noSuchItem(ItemID)
    /// The action does not fit the item's state (for example discarding a pending item).
    case notAllowed(id: ItemID, state: SyncState, action: String)
    /// The fixed payload is for another form than the item.
    case formMismatch(expected: String, got: String)
    /// The item belongs to another workspace than the outbox's current one; it is left alone.
    case otherWorkspace(id: ItemID, itemWorkspace: String, current: String)
    /// The item belongs to another person on this shared phone (or to nobody, when a person is
    /// signed in): it is left alone; hand it over first (`Outbox.handOver`).
    case otherPerson(id: ItemID, owner: String?, current: String?)
    /// A person's name that cannot be one: empty, over 128 bytes, or holding control characters.
    case invalidPrincipal(String)
    /// Nobody is signed in where a person is needed (a hand-over names who did it).
    case nobodySignedIn
    /// No transport serves this workspace (or the one given serves another): nothing can be sent.
    case noTransport(workspace: String)
    /// The file at `path` is not an outbox this build can use; it was not touched.
    case notAnOutbox(path: String, reason: String)
    /// The form does not edit a record (its spec has no `edits:`).
    case notAnEditForm(String)
    /// The form does not delete a record (its spec has no `deletes:`).
    case notADeleteForm(String)
    /// The device holds no such record (not pulled, deleted, or in another scope).
    case noSuchRecord(type: String, id: Int64)
    /// No draft with this id in the current person's view.
    case noSuchDraft(String)
    /// A save named a document other than the one the draft has been since its first save.
    case draftIsAnotherDocument(draft: String, document: String, named: String)
    /// A subscription the app's record specs do not allow: an unknown type, one without
    /// `subscribe_by:`, a field it is not subscribed by, a value or a window that is not one.
    case badSubscription(String)
    /// A stored file could not be fetched to the device now (no server, no such file, bytes
    /// that are not the file's); what was fetched so far is kept for the next try.
    case fileUnavailable(id: Int64, reason: String)

    public var description: String {
        switch self {
        case .invalidPayload(let errors): return "the payload is invalid: \(errors.map(\.description).joined(separator: "; "))"
        case .unknownForm(let name): return "form \(name) is not registered with this outbox"
        case .unknownPlaceholder(let id): return "placeholder \(id) is neither attached, queued nor landed"
        case .stashFailed(let path, let reason): return "could not stash \(path): \(reason)"
        case .storage(let error): return "storage failed: \(error)"
        case .notDurable(let reason): return "the save could not be made durable: \(reason)"
        case .noSuchItem(let id): return "no outbox item \(id)"
        case .notAllowed(let id, let state, let action): return "cannot \(action) item \(id) while it is \(state.rawValue)"
        case .formMismatch(let expected, let got): return "the item holds a \(expected), not a \(got)"
        case .otherWorkspace(let id, let itemWorkspace, let current):
            return "item \(id) belongs to workspace \(itemWorkspace), not the current workspace \(current); switch to it first"
        case .otherPerson(let id, let owner, let current):
            return
                "item \(id) belongs to \(owner.map { "'\($0)'" } ?? "nobody"), not to \(current.map { "'\($0)'" } ?? "nobody"); hand it over first"
        case .invalidPrincipal(let name):
            return "'\(name.prefix(64))' cannot be a person's name: 1 to 128 bytes on one line"
        case .nobodySignedIn: return "nobody is signed in on this device"
        case .noTransport(let workspace): return "no transport serves workspace \(workspace)"
        case .notAnOutbox(let path, let reason): return "\(path) is not a FormSync outbox this build can open: \(reason)"
        case .notAnEditForm(let name): return "form \(name) does not edit a record (its spec has no 'edits:')"
        case .notADeleteForm(let name): return "form \(name) does not delete a record (its spec has no 'deletes:')"
        case .noSuchRecord(let type, let id): return "this device holds no \(type) \(id)"
        case .noSuchDraft(let id): return "no draft \(id) here"
        case .badSubscription(let reason): return "subscription refused: \(reason)"
        case .draftIsAnotherDocument(let draft, let document, let named):
            return "draft \(draft) is document \(document); it cannot become \(named)"
        case .fileUnavailable(let id, let reason): return "file \(id) cannot be fetched now: \(reason)"
        }
    }
}
