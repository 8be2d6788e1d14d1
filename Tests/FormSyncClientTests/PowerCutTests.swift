import FieldForms
import FormSyncModel
import FormSyncTesting
import Foundation
import Synchronization
import Testing

@testable import FormSyncClient

#if canImport(Glibc)
    import Glibc
#endif

/// A disk that loses power. A SIGKILL keeps everything committed (the page cache outlives the
/// process), so the crash harnesses cannot see a "saved" reported before its fsync; here what
/// survives a cut is what the outbox's fsyncs of its log covered. Each fsync that succeeds
/// records how much of the log it covered (the log's length when it began); a cut copies the
/// database and that much of the log (the durable image) together with the list of what the
/// app was told was saved, at one instant. The log only grows while no checkpoint runs, which
/// the tests check (they stay under the checkpointer's threshold).
final class PowerCutDisk: Sendable {
    private struct State {
        var saved: [(document: String, id: ItemID)] = []
        var refuse = false
        /// The next fsync is this slow (ms), once.
        var slowNext: UInt32 = 0
        var slowStarted = false
        var cutOnNextSave = false
        var cutAtSave: (path: String, saved: [(document: String, id: ItemID)])?
        var images = 0
        var cuts = 0
        /// How much of the log the last fsync that succeeded covered.
        var durableLogBytes = 0
    }

    private let database: String
    private let folder: URL
    private let delayMicroseconds: UInt32
    private let state = Mutex(State())

    /// `delayMicroseconds` before each fsync widens the window in which a "saved" reported too
    /// early would show.
    init(database: String, folder: URL, delayMicroseconds: UInt32 = 0) throws {
        self.database = database
        self.folder = folder
        self.delayMicroseconds = delayMicroseconds
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    /// The outbox's fsync of its log. While refusing (a process about to die), it fails and the
    /// image stays as it was.
    func sync(_ descriptor: Int32) -> Int32 {
        if delayMicroseconds > 0 { usleep(delayMicroseconds) }
        let slow = state.withLock { state -> UInt32 in
            defer { state.slowNext = 0 }
            if state.slowNext > 0 { state.slowStarted = true }
            return state.slowNext
        }
        if slow > 0 { usleep(slow * 1000) }
        if state.withLock({ $0.refuse }) {
            errno = EIO
            return -1
        }
        // Frames written while the fsync runs may or may not be on disk: only those before it count.
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return -1 }
        guard fdatasync(descriptor) == 0 else { return -1 }
        state.withLock { state in
            state.images += 1
            state.durableLogBytes = Int(status.st_size)
        }
        return 0
    }

    func refuse(_ refusing: Bool) { state.withLock { $0.refuse = refusing } }
    /// The next fsync takes `milliseconds` before it starts, as a slow disk's would (it blocks
    /// its thread no longer than that).
    func slowNextSync(milliseconds: UInt32) { state.withLock { $0.slowNext = milliseconds } }
    /// Whether the slow fsync has begun.
    var slowSyncStarted: Bool { state.withLock { $0.slowStarted } }
    /// The power goes at the next report of a save, at that very instant.
    func cutAtNextSave() { state.withLock { $0.cutOnNextSave = true } }
    var cutAtSave: (path: String, saved: [(document: String, id: ItemID)])? { state.withLock { $0.cutAtSave } }
    var images: Int { state.withLock { $0.images } }

    /// The app was told `document` is saved as item `id`.
    func saved(_ document: String, _ id: ItemID) {
        state.withLock { state in
            state.saved.append((document, id))
            if state.cutOnNextSave {
                state.cutOnNextSave = false
                state.cutAtSave = try? cut(&state)
            }
        }
    }

    /// The power goes now: a copy of the durable image, and everything reported saved by then.
    func cut() throws -> (path: String, saved: [(document: String, id: ItemID)]) {
        try state.withLock { try cut(&$0) }
    }

    private func cut(_ state: inout State) throws -> (path: String, saved: [(document: String, id: ItemID)]) {
        state.cuts += 1
        let target = folder.appendingPathComponent("cut-\(state.cuts)/outbox.sqlite").path
        try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        // The database file as it is (nothing checkpoints into it here) and the durable part of
        // the log; the shared-memory index is rebuilt on open.
        try FileManager.default.copyItem(atPath: database, toPath: target)
        let log = try FileHandle(forReadingFrom: URL(fileURLWithPath: database + "-wal"))
        defer { try? log.close() }
        let durable = try log.read(upToCount: state.durableLogBytes) ?? Data()
        try durable.write(to: URL(fileURLWithPath: target + "-wal"))
        return (target, state.saved)
    }
}

/// How many enqueuing tasks finished, and the cuts taken so far.
final class Progress: Sendable {
    let done = Atomic<Int>(0)
    let cuts = Mutex<[(path: String, saved: [(document: String, id: ItemID)])]>([])
}

@Suite(.serialized) struct PowerCutTests {
    /// The documents of `saved` missing from the outbox at `path` (or held under another id).
    static func missing(_ saved: [(document: String, id: ItemID)], at path: String) async throws -> [String] {
        let outbox = try Outbox(
            path: path, workspace: "acme", forms: Harness.forms, transports: { ScriptedTransport(workspace: $0) })
        var missing: [String] = []
        for (document, id) in saved where try await outbox.item(id)?.documentID != document { missing.append("\(document) (item \(id))") }
        return missing
    }

    @Test func everyEnqueueReportedSavedIsInTheDurableImageWheneverThePowerGoes() async throws {
        let h = try Harness()
        let disk = try PowerCutDisk(database: h.path, folder: h.directory.appendingPathComponent("disk"), delayMicroseconds: 1500)
        h.syncLog = { disk.sync($0) }
        let outbox = try h.open()
        let progress = Progress()
        // The cuts fall from a thread of their own, outside the task pool the enqueues (and the
        // fsync's delay) keep busy, every 3 ms until the enqueuers are done.
        let cutting = Task.detached {
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    while progress.done.load(ordering: .relaxed) < 4 {
                        // Up to 25 cuts that fall after something was reported saved.
                        if progress.cuts.withLock({ $0.count }) < 25, let cut = try? disk.cut(), !cut.saved.isEmpty {
                            progress.cuts.withLock { $0.append(cut) }
                        }
                        usleep(3000)
                    }
                    if let cut = try? disk.cut() { progress.cuts.withLock { $0.append(cut) } }
                    finished.resume()
                }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<4 {
                group.addTask {
                    defer { progress.done.add(1, ordering: .relaxed) }
                    for n in 0..<30 {
                        // Midway, each task waits for two more cuts, so that some fall with
                        // its first half saved and its second half not, however the machine
                        // schedules the cutting thread.
                        if n == 15 {
                            let target = progress.cuts.withLock { $0.count } + 2
                            while progress.cuts.withLock({ $0.count }) < min(target, 25) { try await Task.sleep(for: .milliseconds(1)) }
                        }
                        // Tasks 0 and 1 enqueue the same documents, as do 2 and 3.
                        let document = "p\(task / 2)-\(n)"
                        disk.saved(document, try await outbox.enqueue(order(Int64(task / 2 + 1), quantity: n + 1), documentID: document))
                    }
                }
            }
            try await group.waitForAll()
        }
        await cutting.value
        let cuts = progress.cuts.withLock { $0 }
        #expect(cuts.contains { !$0.saved.isEmpty && $0.saved.count < 120 }, "a cut fell while enqueues were under way")
        #expect(cuts.last?.saved.count == 120)
        #expect(outbox.checkpointer?.checkpoints == 0 && outbox.checkpointer?.writerCheckpoints == 0, "the log only grew")
        for cut in cuts {
            let missing = try await Self.missing(cut.saved, at: cut.path)
            #expect(missing.isEmpty, "reported saved before the cut, lost by it: \(missing.prefix(5)) of \(cut.saved.count)")
        }
    }

    @Test func aCommitAKilledProcessLeftUnsyncedIsOnDiskBeforeARepeatedEnqueueReportsIt() async throws {
        let h = try Harness()
        let disk = try PowerCutDisk(database: h.path, folder: h.directory.appendingPathComponent("disk"))
        h.syncLog = { disk.sync($0) }
        let dying = try h.open()
        let first = try await dying.enqueue(order(1), documentID: "doc-0")
        disk.saved("doc-0", first)
        // The process commits the next save and dies before its fsync: the commit is in the
        // log (and the page cache), not on disk. Its caller was not told "saved".
        disk.refuse(true)
        await #expect(throws: OutboxError.self) { try await dying.enqueue(order(2), documentID: "doc-1") }
        disk.refuse(false)
        // The app restarts and enqueues the same document again: it is found, and reported saved.
        let restarted = try h.open()
        let again = try await restarted.enqueue(order(2), documentID: "doc-1")
        disk.saved("doc-1", again)
        let cut = try disk.cut()
        let missing = try await Self.missing(cut.saved, at: cut.path)
        #expect(missing.isEmpty, "reported saved, lost by a power cut: \(missing)")
        withExtendedLifetime(dying) {}
    }

    @Test func aRepeatedEnqueueWaitsForTheFsyncOfTheSaveItFinds() async throws {
        let h = try Harness()
        let disk = try PowerCutDisk(database: h.path, folder: h.directory.appendingPathComponent("disk"))
        h.syncLog = { disk.sync($0) }
        let outbox = try h.open()
        // Another enqueue under way, as far as the outbox can tell: the save goes the shared
        // way, its fsync on a task of its own, the actor free meanwhile.
        outbox.enqueueCallers.value.add(1, ordering: .relaxed)
        defer { outbox.enqueueCallers.value.subtract(1, ordering: .relaxed) }
        // The first save's fsync is slow; the power goes the moment anything is reported saved.
        disk.slowNextSync(milliseconds: 150)
        disk.cutAtNextSave()
        let first = Task {
            let id = try await outbox.enqueue(order(1), documentID: "doc-1")
            disk.saved("doc-1", id)
            return id
        }
        for _ in 0..<2_000 where !disk.slowSyncStarted { try await Task.sleep(for: .milliseconds(1)) }
        #expect(disk.slowSyncStarted)
        // The same document again: it finds the first save's item, committed, not yet on disk.
        let again = Task {
            let id = try await outbox.enqueue(order(1), documentID: "doc-1")
            disk.saved("doc-1", id)
            return id
        }
        let ids = try await (first.value, again.value)
        #expect(ids.0 == ids.1)
        let cut = try #require(disk.cutAtSave)
        let missing = try await Self.missing(cut.saved, at: cut.path)
        #expect(missing.isEmpty, "reported saved while its save's fsync was still running, lost by a cut then: \(missing)")
    }
}
