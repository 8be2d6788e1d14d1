import FormSyncModel
import FormSyncProtocol
import FormSyncSQLite
import Foundation

/// A read-only look at an outbox database, for support tools (`formsync outbox inspect`): items
/// by workspace and state, one item's attempt history, counts. It changes nothing it is pointed
/// at, not a byte, a mode or a timestamp: it never opens the file with SQLite at all. It checks
/// the file's header, copies the database and its log into a private folder, and reads the copy
/// through a read-only connection (an outbox of an older schema is migrated in the copy), so
/// no lock, shared-memory write, lease reclaim, stash sweep or checkpoint can touch the
/// original, even while its app has it open. A file that is not an outbox is refused with the
/// reason, before anything is copied.
public final class OutboxInspector {
    private let folder: String
    private let store: OutboxStore
    /// The file it was pointed at (errors name it, not the copy).
    public let path: String

    /// Opens a private copy of the outbox at `path`. Throws `OutboxError.notAnOutbox` with the
    /// reason for a missing file, a folder, an empty or damaged file, another program's
    /// database, or one written by a newer FormSync.
    public init(path: String) throws {
        self.path = path
        // The real file, wherever a symbolic link points: its log is beside it, and the copy is
        // of its bytes (a copied link would lead SQLite back to the original).
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let size = try Self.regularFileSize(real, original: path, what: "it")
        let expected = try Self.checkHeader(real, original: path)
        if let expected, expected != size {
            throw OutboxError.notAnOutbox(
                path: path, reason: "it is \(size) bytes, and its header says \(expected): not a whole SQLite database")
        }
        let log = real + "-wal"
        let logSize: Int64? =
            FileManager.default.fileExists(atPath: log) ? try Self.regularFileSize(log, original: path, what: "its -wal log") : nil
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-inspect-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        do {
            let free = try URL(fileURLWithPath: folder).resourceValues(forKeys: [.volumeAvailableCapacityKey]).volumeAvailableCapacity
            let needed = size + (logSize ?? 0)
            if let free, Int64(free) < needed + (64 << 20) {
                throw OutboxError.notAnOutbox(
                    path: path, reason: "a copy of its \(needed) bytes would not fit in the temporary folder (\(free) bytes free)")
            }
            let copy = (folder as NSString).appendingPathComponent("outbox.sqlite")
            try Self.copyBytes(from: real, to: copy, count: size)
            if let logSize { try Self.copyBytes(from: log, to: copy + "-wal", count: logSize) }
            store = try Self.open(copy, original: path)
        } catch {
            try? FileManager.default.removeItem(atPath: folder)
            if let error = error as? OutboxError { throw error }
            if let error = error as? SQLiteError {
                throw OutboxError.notAnOutbox(path: path, reason: "it cannot be read (\(error.message))")
            }
            throw OutboxError.notAnOutbox(path: path, reason: "it cannot be copied for reading (\(error.localizedDescription))")
        }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The workspaces that hold items or records, sorted.
    public func workspaces() throws -> [String] {
        try read {
            try store.workspaceNames(counts: store.counts())
        }
    }

    /// A support bundle of this outbox (`SupportBundle`), as `formsync outbox inspect --bundle`
    /// writes it: counts, items with their reasons and attempts, people, the revocation; no
    /// token, no file bytes, payloads only when `includePayloads`.
    public func supportBundle(includePayloads: Bool = false) throws -> SupportBundle {
        try read {
            try SupportBundleBuilder(store: store, state: { Self.state($0.state) }, countedAs: Self.state).bundle(
                device: nil, answering: nil, includePayloads: includePayloads, settings: [:], now: Date())
        }
    }

    /// The people known on a shared phone: whether their credential is on it, and who is current.
    public func people() throws -> [(principal: String, signedIn: Bool, current: Bool)] {
        try read { try store.people() }.map { ($0.principal, $0.present, $0.current) }
    }

    /// Every hand-over of an item: from whom, to whom, by whom, when.
    public func handovers(of id: ItemID) throws -> [Handover] {
        try read { try store.handovers(of: id.rawValue) }.map {
            Handover(from: $0.from, to: $0.to, by: $0.by, at: Date(millisecondsSince1970: $0.at))
        }
    }

    /// Items of `workspace` (every workspace when nil) in `states`, in enqueue order. Leased
    /// items show as `sending`, pending ones as `savedOnDevice`: a file has no network state.
    public func items(workspace: String?, in states: Set<SyncState> = Set(SyncState.allCases)) throws -> [OutboxItem] {
        let rows = try read {
            try (workspace.map { [$0] } ?? workspaces()).flatMap {
                try store.items(
                    workspace: $0, states: [.pending, .leased, .confirmed, .rejected, .conflict, .exhausted, .blocked, .sealed])
            }
        }
        return rows.sorted { $0.id < $1.id }.map { OutboxItem($0, state: Self.state($0.state)) }.filter { states.contains($0.state) }
    }

    /// When the server revoked the device and why (`Outbox.deviceRevoked`); nil while it has not.
    public func revocation() throws -> (reason: String, at: Date)? {
        try read { try store.revocation() }.map { ($0.reason, Date(millisecondsSince1970: $0.at)) }
    }

    /// One item by id, whatever its workspace.
    public func item(_ id: ItemID) throws -> OutboxItem? {
        try read { try store.item(id.rawValue) }.map { OutboxItem($0, state: Self.state($0.state)) }
    }

    /// What became of an item's attempts, oldest first.
    public func history(of id: ItemID) throws -> [AttemptRecord] {
        try read { try store.attempts(of: id.rawValue) }
    }

    /// Counts per state of `workspace` (every workspace when nil).
    public func stateCounts(workspace: String?) throws -> [SyncState: Int] {
        var result: [SyncState: Int] = [:]
        for (name, counts) in try read({ try store.counts() }) where workspace == nil || PersonalView(key: name).workspace == workspace {
            for (state, count) in counts where count > 0 { result[Self.state(state), default: 0] += count }
        }
        return result
    }

    /// How many records the device holds for `workspace` (every workspace when nil), for
    /// every person.
    public func recordCount(workspace: String?) throws -> Int {
        try read { try store.recordCount(workspace: workspace) }
    }

    private func read<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw OutboxError.notAnOutbox(path: path, reason: "it cannot be read (\(error.message))")
        }
    }

    private static func state(_ stored: OutboxStore.State) -> SyncState {
        switch stored {
        case .pending: return .savedOnDevice
        case .leased: return .sending
        case .confirmed: return .confirmed
        case .rejected: return .rejected
        case .conflict: return .conflict
        case .exhausted: return .exhausted
        case .blocked: return .blocked
        case .sealed: return .sealed
        }
    }

    /// The size of the regular file at `file`; anything else (a FIFO that would never end, a
    /// device, a folder, a socket) is refused before it is opened.
    private static func regularFileSize(_ file: String, original: String, what: String) throws -> Int64 {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file) else {
            throw OutboxError.notAnOutbox(path: original, reason: what == "it" ? "there is no such file" : "\(what) cannot be read")
        }
        switch attributes[.type] as? FileAttributeType {
        case .typeRegular?:
            return (attributes[.size] as? NSNumber)?.int64Value ?? 0
        case .typeDirectory?:
            throw OutboxError.notAnOutbox(path: original, reason: "\(what == "it" ? "it is" : "\(what) is") a folder")
        default:
            throw OutboxError.notAnOutbox(
                path: original, reason: "\(what == "it" ? "it is" : "\(what) is") not a regular file (a pipe, a device or a socket)")
        }
    }

    /// The first 100 bytes of an SQLite file say what it is: its magic, and (at offset 68,
    /// big-endian) the application id FormSync stamps on every outbox. Returns the size the
    /// header gives the database (page size × page count), when the header's count is valid.
    private static func checkHeader(_ path: String, original: String) throws -> Int64? {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw OutboxError.notAnOutbox(path: original, reason: "it cannot be read")
        }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 100)) ?? Data()
        guard !header.isEmpty else { throw OutboxError.notAnOutbox(path: original, reason: "the file is empty") }
        guard header.count == 100, header.prefix(16) == Data("SQLite format 3\0".utf8) else {
            throw OutboxError.notAnOutbox(path: original, reason: "it is not an SQLite database")
        }
        func number(_ range: Range<Int>) -> Int64 { header[range].reduce(Int64(0)) { $0 << 8 | Int64($1) } }
        let id = number(68..<72)
        guard id == OutboxStore.applicationID || id == 0 else {
            throw OutboxError.notAnOutbox(path: original, reason: "its application id is \(id), not FormSync's")
        }
        // The page count at offset 28 is valid when the change counter (24) equals the
        // version-valid-for number (92), as every SQLite since 3.7.0 keeps it.
        let pageSize = number(16..<18) == 1 ? 65_536 : number(16..<18)
        guard (512...65_536).contains(pageSize), pageSize & (pageSize - 1) == 0 else {
            throw OutboxError.notAnOutbox(path: original, reason: "its header names no valid page size")
        }
        guard number(24..<28) == number(92..<96), number(28..<32) > 0 else { return nil }
        return pageSize * number(28..<32)
    }

    /// Copies the first `count` bytes of `source` (a regular file) to a new file at `target`, a
    /// megabyte at a time; the source is only read.
    private static func copyBytes(from source: String, to target: String, count: Int64) throws {
        guard FileManager.default.createFile(atPath: target, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
        let input = try FileHandle(forReadingFrom: URL(fileURLWithPath: source))
        defer { try? input.close() }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: target))
        defer { try? output.close() }
        var copied: Int64 = 0
        while copied < count {
            guard let piece = try input.read(upToCount: Int(min(1 << 20, count - copied))), !piece.isEmpty else { break }
            try output.write(contentsOf: piece)
            copied += Int64(piece.count)
        }
    }

    /// Opens the copy read-only; a copy of an older schema is first brought to this build's
    /// (in the copy), and anything that is not an outbox is refused.
    private static func open(_ copy: String, original: String) throws -> OutboxStore {
        var db = try SQLiteConnection(readingOnly: copy)
        let stamped = try db.query("PRAGMA application_id") { $0.int(0) }.first == OutboxStore.applicationID
        let hasMigrations =
            try db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'") { _ in true }.first ?? false
        let schema = hasMigrations ? (try db.query("SELECT MAX(version) FROM migrations") { $0.optionalInt(0) }.first ?? nil) ?? 0 : 0
        let first = hasMigrations ? (try db.query("SELECT name FROM migrations WHERE version = 1") { $0.text(0) }.first ?? nil) : nil
        let legacy = first == "outbox"
        guard stamped || legacy else { throw OutboxError.notAnOutbox(path: original, reason: "it is another program's SQLite database") }
        let latest = Int64(OutboxMigrations.all.latestVersion)
        guard schema <= latest else {
            throw OutboxError.notAnOutbox(
                path: original, reason: "it was written by a newer FormSync (schema \(schema), this build knows \(latest))")
        }
        if schema < latest || !stamped {
            db = try OutboxStore(path: copy, now: 0).db
        }
        return OutboxStore(reading: db)
    }
}
