/// The requests a server saw, in arrival order: a ring of at most
/// `SyncServer.requestLogCapacity` entries and `SyncServer.requestLogByteBudget` bytes of text,
/// each text cut to `SyncServer.requestLogFieldBytes`, so that no client can grow it without
/// bound.
struct RequestLog {
    private var entries: [SyncServer.LoggedRequest] = []
    /// Entries before it are dropped (compacted in batches).
    private var head = 0
    /// Bytes of text the log holds now.
    private(set) var bytes = 0

    /// The entries kept, oldest first.
    var kept: [SyncServer.LoggedRequest] { Array(entries[head...]) }

    mutating func append(_ entry: SyncServer.LoggedRequest) {
        var entry = entry
        entry.method = Self.clipped(entry.method)!
        entry.path = Self.clipped(entry.path)!
        entry.idempotencyKey = Self.clipped(entry.idempotencyKey)
        entry.documentID = Self.clipped(entry.documentID)
        entry.workspace = Self.clipped(entry.workspace)
        entries.append(entry)
        bytes += Self.textBytes(entry)
        while entries.count - head > SyncServer.requestLogCapacity || bytes > SyncServer.requestLogByteBudget {
            bytes -= Self.textBytes(entries[head])
            head += 1
        }
        if head >= 1024 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }

    private static func clipped(_ text: String?) -> String? {
        guard let text, text.utf8.count > SyncServer.requestLogFieldBytes else { return text }
        return String(decoding: text.utf8.prefix(SyncServer.requestLogFieldBytes - 3), as: UTF8.self) + "…"
    }

    private static func textBytes(_ entry: SyncServer.LoggedRequest) -> Int {
        entry.method.utf8.count + entry.path.utf8.count + (entry.idempotencyKey?.utf8.count ?? 0) + (entry.documentID?.utf8.count ?? 0)
            + (entry.workspace?.utf8.count ?? 0)
    }
}
