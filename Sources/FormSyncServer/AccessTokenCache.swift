import Synchronization

/// Access tokens the server has already found valid, so that checking a request's token (once
/// on its head, once more when it writes) costs a dictionary lookup instead of a query under
/// the server's lock. Filled and emptied only under that lock, in step with the tokens table;
/// read without it. Bounded: when full it starts over.
final class AccessTokenCache: Sendable {
    struct Entry {
        var grant: SyncServer.Grant
        var expiresAt: Int64
        /// The device it was issued to, and whether that device is revoked (as read).
        var device: String?
        var revoked: Bool
    }

    /// Entries held at most.
    static let capacity = 10_000

    private let entries = Mutex<[String: Entry]>([:])

    func entry(_ token: String) -> Entry? {
        entries.withLock { $0[token] }
    }

    func insert(_ token: String, _ entry: Entry) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = entry
        }
    }

    /// Entries held now.
    var count: Int { entries.withLock { $0.count } }

    func removeAll() {
        entries.withLock { $0.removeAll() }
    }
}
