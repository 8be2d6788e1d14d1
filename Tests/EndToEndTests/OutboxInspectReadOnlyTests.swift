import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncSQLite
import Foundation
import Testing

/// Issue 31, 2: `formsync outbox inspect` changes nothing it is pointed at: not the bytes, the
/// modes or the timestamps of any file in the folder, for an outbox its app has open (with a
/// log, shared memory and an expired lease), a closed outbox, another program's database, a
/// folder, a text file and a damaged outbox.
struct OutboxInspectReadOnlyTests {
    /// Every file in a folder: its bytes, mode and modification time.
    struct FileState: Equatable {
        var bytes: Data
        var mode: Int
        var modified: Date
    }

    static func state(of folder: URL) throws -> [String: FileState] {
        var result: [String: FileState] = [:]
        let root = try FileManager.default.attributesOfItem(atPath: folder.path)
        result["."] = FileState(
            bytes: Data(), mode: root[.posixPermissions] as? Int ?? -1, modified: root[.modificationDate] as? Date ?? .distantPast)
        for name in try FileManager.default.subpathsOfDirectory(atPath: folder.path) {
            let path = folder.appendingPathComponent(name).path
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let isFolder = attributes[.type] as? FileAttributeType == .typeDirectory
            result[name] = FileState(
                bytes: isFolder ? Data() : try Data(contentsOf: URL(fileURLWithPath: path)),
                mode: attributes[.posixPermissions] as? Int ?? -1,
                modified: attributes[.modificationDate] as? Date ?? .distantPast)
        }
        return result
    }

    func inspect(_ path: String, _ arguments: String...) async throws -> ProcessRunner.Result {
        try await ProcessRunner.run(DemoProcessTests.formsync, ["outbox", "inspect", path] + arguments)
    }

    @Test func inspectChangesNothingOfAnOutboxItsAppHasOpenNorOfAnythingElse() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("inspect-ro-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let clock = ManualClock(1_800_000_000_000)
        let environment = OutboxEnvironment(now: { clock.now }, random: { 0.5 }, newID: OutboxEnvironment.live.newID)

        // An outbox its app has open: items queued, one leased whose lease has expired (an open
        // used to reclaim it), a stashed photo, the log and shared memory present.
        let live = folder.appendingPathComponent("live.sqlite").path
        let hold = HoldingTransport()
        let open = try Outbox(
            path: live, forms: FormCatalog.forms, transport: hold, configuration: Outbox.Configuration(lease: .milliseconds(1000)),
            environment: environment)
        let photoURL = folder.appendingPathComponent("photo.jpg")
        try MediaSignature.stamped(Data(repeating: 9, count: 4000), asFileNamed: "photo.jpg").write(to: photoURL)
        let photo = open.placeholderIDs.next()
        try await open.enqueue(
            NewCustomer(name: "Shop", segment: .retail, shopFront: FileRef(id: photo, contentType: "image/jpeg")),
            attachments: [.init(placeholder: photo, source: photoURL, contentType: "image/jpeg")])
        try await open.enqueue(NewCustomer(name: "Other shop", segment: .wholesale))
        let flushing = Task { await open.flush() }
        await hold.waitForFirstSend()
        clock.advance(by: 60_000)
        #expect(FileManager.default.fileExists(atPath: live + "-wal") && FileManager.default.fileExists(atPath: live + "-shm"))

        // A closed outbox, another program's database, a text file, a folder, a damaged outbox.
        let closed = folder.appendingPathComponent("closed.sqlite").path
        do {
            let outbox = try Outbox(path: closed, forms: FormCatalog.forms, transport: OfflineOutboxTransport(), environment: environment)
            try await outbox.enqueue(NewCustomer(name: "Closed shop", segment: .retail))
        }
        let foreign = folder.appendingPathComponent("foreign.sqlite").path
        do {
            let db = try SQLiteConnection(path: foreign)
            try db.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hello')")
        }
        // Another program's database in rollback-journal mode: an open that switched it to WAL
        // changed its header.
        let rollback = folder.appendingPathComponent("rollback.db").path
        do {
            let db = try SQLiteConnection(path: rollback)
            try db.execute("PRAGMA journal_mode=DELETE; CREATE TABLE t (x); INSERT INTO t VALUES (1)")
        }
        let text = folder.appendingPathComponent("notes.txt").path
        try Data("not a database\n".utf8).write(to: URL(fileURLWithPath: text))
        let subfolder = folder.appendingPathComponent("a-folder")
        try FileManager.default.createDirectory(at: subfolder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let damaged = folder.appendingPathComponent("damaged.sqlite").path
        var bytes = try Data(contentsOf: URL(fileURLWithPath: closed))
        bytes.replaceSubrange(4096..<min(bytes.count, 12_288), with: Data(repeating: 0xA5, count: min(bytes.count, 12_288) - 4096))
        try bytes.write(to: URL(fileURLWithPath: damaged))
        // Every file readable by others too, so that a chmod to 0600 would show.
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where !name.hasPrefix("a-folder") {
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: folder.appendingPathComponent(name).path)
        }
        let before = try Self.state(of: folder)
        try await Task.sleep(for: .milliseconds(1100))  // a rewrite within the same second could keep its timestamp

        let overview = try await inspect(live)
        #expect(overview.status == 0, "\(overview.errors)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(overview.output.utf8)) as? [String: Any])
        #expect((object["items"] as? [Any])?.count == 3, "the live outbox's items, read from its log")
        #expect(object["workspaces"] as? [String] == ["default"], "every workspace by default")
        #expect(try await inspect(live, "--item", "1").status == 0)
        #expect(
            try await inspect(live, "--bundle", folder.appendingPathComponent("../bundle-\(UUID().uuidString).json").standardized.path)
                .status == 0)
        #expect(try await inspect(closed, "--item", "1").output.contains("Closed shop"))
        for (path, reason) in [
            (foreign, "another program"), (rollback, "another program"), (text, "not an SQLite database"), (subfolder.path, "folder"),
            (damaged, "cannot be read"),
        ] {
            let refused = try await inspect(path)
            #expect(refused.status == 1, "\(path): \(refused.output)")
            #expect(refused.errors.contains("is not a FormSync outbox") && refused.errors.contains(reason), "\(path): \(refused.errors)")
        }
        #expect(try await inspect(folder.appendingPathComponent("missing.sqlite").path).status == 1)

        let after = try Self.state(of: folder)
        #expect(after.keys.sorted() == before.keys.sorted(), "files appeared or went: \(Set(after.keys).symmetricDifference(before.keys))")
        for (name, state) in before {
            #expect(after[name]?.bytes == state.bytes, "\(name): its bytes changed")
            #expect(after[name]?.mode == state.mode, "\(name): its mode changed")
            #expect(after[name]?.modified == state.modified, "\(name): its modification time changed")
        }
        await hold.release()
        _ = await flushing.value
    }
}

/// A transport that holds the first send until released, so that an item stays leased.
actor HoldingTransport: OutboxTransport {
    nonisolated let workspace = "default"
    private var sent = false
    private var sendWaiters: [CheckedContinuation<Void, Never>] = []
    private var released = false
    private var releaseWaiters: [CheckedContinuation<Void, Never>] = []

    func send(_ request: OutboundRequest) async -> DeliveryOutcome {
        sent = true
        for waiter in sendWaiters { waiter.resume() }
        sendWaiters = []
        if !released { await withCheckedContinuation { releaseWaiters.append($0) } }
        return .unreachable(reason: "held")
    }

    func probe() async -> Bool { false }

    func waitForFirstSend() async {
        if sent { return }
        await withCheckedContinuation { sendWaiters.append($0) }
    }

    func release() {
        released = true
        for waiter in releaseWaiters { waiter.resume() }
        releaseWaiters = []
    }
}

/// A device with no signal.
struct OfflineOutboxTransport: OutboxTransport {
    var workspace = "default"
    func send(_ request: OutboundRequest) async -> DeliveryOutcome { .unreachable(reason: "no signal") }
    func probe() async -> Bool { false }
}
