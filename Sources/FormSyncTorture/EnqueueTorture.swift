import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `formsync-lab torture enqueue`: a process (`formsync-lab torture enqueuer`) enqueues from several
/// tasks at once — so that enqueues gather in batches, one transaction and one fsync for
/// several — while this harness SIGKILLs it after seeded delays and restarts it. Each task
/// enqueues its own documents in order, new customers with a photo among orders, and logs each
/// one (fsynced) once `enqueue` returned. A last run finishes them all. Then the outbox must
/// hold every document exactly once (a restarted process enqueues the same documents again, and
/// once-means-once must find them), every logged document under the id it was given, one file
/// item per photo, and in the stash exactly the files those items name.
package struct EnqueueTorture {
    package struct Options: Sendable {
        package var kills: Int
        package var seed: UInt64
        package var tasks: Int
        package var count: Int
        package var executable: String
        package var folder: URL

        package init(kills: Int, seed: UInt64, tasks: Int, count: Int, executable: String, folder: URL) {
            (self.kills, self.seed, self.tasks, self.count, self.executable, self.folder) = (kills, seed, tasks, count, executable, folder)
        }
    }

    /// What the run did and every check that failed (empty when all held).
    package struct Result: CustomStringConvertible, Sendable {
        package var kills = 0
        package var runs = 0
        package var logged = 0
        package var documents = 0
        package var files = 0
        /// The last run's own figures: how many documents it saved new, in how many commits.
        package var lastRun = ""
        package var failures: [String] = []

        package var description: String {
            var lines = [
                "kills: \(kills) over \(runs) enqueuer runs",
                "outbox: \(documents) documents, \(logged) logged as saved, \(files) file items with their stash copies",
                "last run: \(lastRun)",
            ]
            if failures.isEmpty {
                lines.append(
                    "checks: all held (every document once, every logged one under its id, one file item per photo, no orphan stash file)")
            } else {
                lines = ["FAILED"] + failures + lines
            }
            return lines.joined(separator: "\n")
        }
    }

    let options: Options

    package init(_ options: Options) { self.options = options }

    var database: String { options.folder.appendingPathComponent("device.sqlite").path }
    var log: String { options.folder.appendingPathComponent("device.log").path }

    package func run() async throws -> Result {
        try FileManager.default.createDirectory(at: options.folder, withIntermediateDirectories: true)
        var result = Result()
        var random = SplitMix64(state: options.seed)
        func enqueuer() throws -> ChildProcess {
            let output = options.folder.appendingPathComponent("enqueuer.out")
            return try ChildProcess(
                options.executable,
                ["torture", "enqueuer", "--db", database, "--log", log, "--tasks", "\(options.tasks)", "--count", "\(options.count)"],
                standardOutput: .file(output.path), standardError: .file(output.path))
        }
        for _ in 0..<options.kills {
            let process = try enqueuer()
            result.runs += 1
            // Long enough, often, to open the outbox and get well into a batch.
            try await Task.sleep(for: .milliseconds(20 + Int(random.next() % 400)))
            if process.isRunning {
                process.signal(SIGKILL)
                if process.waitUntilExit() == .signal(SIGKILL) { result.kills += 1 }
            } else if case .exit(let status) = process.waitUntilExit(), status != 0 {
                result.failures.append("an enqueuer run exited with status \(status): \(output())")
            }
        }
        let last = try enqueuer()
        result.runs += 1
        let deadline = Date().addingTimeInterval(120)
        while last.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        if last.isRunning {
            last.signal(SIGKILL)
            result.failures.append("the last enqueuer run did not finish within 120 s")
        }
        let status = last.waitUntilExit()
        if status != .exit(0) { result.failures.append("the last enqueuer run ended with \(status): \(output())") }
        if let line = output().split(separator: "\n").first(where: { $0.hasPrefix("saved: ") }) {
            result.lastRun = String(line.dropFirst(7))
        }
        try await check(&result)
        return result
    }

    func output() -> String {
        (try? String(contentsOf: options.folder.appendingPathComponent("enqueuer.out"), encoding: .utf8)) ?? ""
    }

    /// Checks the outbox and the stash against the log and the documents the tasks enqueue.
    func check(_ result: inout Result) async throws {
        let outbox = try Outbox(path: database, forms: Self.forms, transport: ScriptedTransport(workspace: Self.workspace))
        let items = try await outbox.items(in: Set(SyncState.allCases))
        let submissions = items.filter { $0.kind == .submission }
        let byDocument = Dictionary(grouping: submissions, by: \.documentID)
        let expected = Set((0..<options.tasks).flatMap { task in (0..<options.count).map { Self.documentID(task: task, index: $0) } })
        result.documents = byDocument.count
        for (document, held) in byDocument where held.count != 1 {
            result.failures.append("document \(document) is held \(held.count) times")
        }
        let missing = expected.subtracting(byDocument.keys)
        if !missing.isEmpty {
            result.failures.append(
                "\(missing.count) documents are missing, \(missing.sorted().prefix(5).joined(separator: ", ")) among them")
        }
        let unknown = Set(byDocument.keys).subtracting(expected)
        if !unknown.isEmpty {
            result.failures.append("\(unknown.count) documents no task enqueued: \(unknown.sorted().prefix(5).joined(separator: ", "))")
        }
        // The log: one "document id" line per enqueue that returned; a line torn by a kill has no
        // newline and is not a claim.
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        if !text.hasSuffix("\n"), !lines.isEmpty { lines.removeLast() }
        var logged: [String: Int64] = [:]
        for line in lines {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let id = Int64(parts[1]) else {
                result.failures.append("a log line does not read: \(line)")
                continue
            }
            let document = String(parts[0])
            if let earlier = logged[document], earlier != id {
                result.failures.append("document \(document) was logged under ids \(earlier) and \(id)")
            }
            logged[document] = id
        }
        result.logged = logged.count
        for (document, id) in logged.sorted(by: { $0.key < $1.key }) where byDocument[document]?.first?.id != ItemID(id) {
            result.failures.append(
                "document \(document) was logged as saved under id \(id) and is \(byDocument[document].map { "held under \($0.map(\.id))" } ?? "gone")"
            )
        }
        // Photos: one file item each, and the stash holds exactly their copies.
        let files = items.filter { $0.kind == .file }
        let photos = options.tasks * (0..<options.count).filter(Self.isCustomer).count
        result.files = files.count
        if files.count != photos { result.failures.append("\(files.count) file items for \(photos) photos") }
        let stashed = (try? FileManager.default.contentsOfDirectory(atPath: database + ".stash")) ?? []
        if stashed.count != files.count { result.failures.append("\(stashed.count) files in the stash for \(files.count) file items") }
    }

    // MARK: The enqueuer process

    static let workspace = "enqueue-torture"
    static let forms: [any FormPayload.Type] = [SalesOrder.self, NewCustomer.self]

    static func documentID(task: Int, index: Int) -> String { "t\(task)-\(index)" }
    static func isCustomer(_ index: Int) -> Bool { index % 5 == 0 }

    /// `formsync-lab torture enqueuer`: `tasks` tasks at once, each enqueueing its `count` documents
    /// in order (every fifth a new customer with a photo, the rest orders), each logged once its
    /// enqueue returned. A restarted process enqueues the same documents again, byte for byte.
    package static func enqueuer(database: String, log: String, tasks: Int, count: Int) async throws -> Int32 {
        let outbox = try Outbox(path: database, forms: forms, transport: ScriptedTransport(workspace: workspace))
        let logFile = try LogFile(path: log)
        // Beside the database: the process is killed by design, and its defer never runs.
        let scratch = URL(fileURLWithPath: database + ".photos-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let before = try await outbox.items(in: Set(SyncState.allCases)).filter { $0.kind == .submission }.count
        let commits = Atomic<Int>(0)
        await outbox.observeCommits { _ in commits.add(1, ordering: .relaxed) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for index in 0..<count {
                        let document = documentID(task: task, index: index)
                        let id: ItemID
                        if isCustomer(index) {
                            let (customer, photo) = (-Int64(1_000_000 + task * 10_000 + index), -Int64(2_000_000 + task * 10_000 + index))
                            let source = scratch.appendingPathComponent("\(document).jpg")
                            try MediaSignature.stamped(
                                Data((0..<(2_000 + index * 37)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ task) }),
                                asFileNamed: "photo.jpg"
                            ).write(to: source)
                            id = try await outbox.enqueue(
                                NewCustomer(
                                    name: "Shop \(document)", segment: .retail, shopFront: FileRef(id: photo, contentType: "image/jpeg")),
                                attachments: [.init(placeholder: photo, source: source, contentType: "image/jpeg")], documentID: document,
                                creates: customer)
                        } else {
                            let order = SalesOrder(
                                customerId: EntityRef(Int64(task + 1)), orderDate: LocalDate("2026-12-02"),
                                lines: [
                                    .init(
                                        sku: "AB-\(1000 + index)", quantity: 1 + index % 9,
                                        unitPrice: Money(minorUnits: 250, currency: "EUR"))
                                ])
                            id = try await outbox.enqueue(order, documentID: document)
                        }
                        try logFile.append("\(document) \(id)\n")
                    }
                }
            }
            try await group.waitForAll()
        }
        let saved = try await outbox.items(in: Set(SyncState.allCases)).filter { $0.kind == .submission }.count - before
        print("saved: \(saved) new documents in \(commits.load(ordering: .relaxed)) commits")
        return 0
    }
}

/// The enqueuer's log: lines appended and fsynced one at a time, from any task.
final class LogFile: Sendable {
    let path: String
    let descriptor: Int32
    let lock = Mutex(())

    init(path: String) throws {
        self.path = path
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw TortureFailure("cannot open the log \(path)") }
    }

    deinit { close(descriptor) }

    func append(_ line: String) throws {
        let bytes = Array(line.utf8)
        try lock.withLock { _ in
            guard write(descriptor, bytes, bytes.count) == bytes.count, fsync(descriptor) == 0 else {
                throw TortureFailure("cannot write the log \(path)")
            }
        }
    }
}

struct TortureFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
