import FormSyncTesting
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Children the tests start must never outlive them: an orphaned server holds the test
/// runner's output pipe open, and the runner then waits for it forever (a CI timeout).
struct ChildProcessTests {
    /// The `formsync` tool built beside this test bundle.
    static var formsync: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("formsync")
    }

    /// Whether `pid` has ended (gone, or a zombie nobody reaped yet).
    static func ended(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    @Test func aServerWhoseParentDiesExitsOnItsOwn() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orphan-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // The shell starts a server that names the shell as its parent, prints its pid and exits.
        let run = try await ChildProcess.run(
            "/bin/sh",
            [
                "-c",
                "FORMSYNC_PARENT_PID=$$ \"$0\" serve --port 0 --db \"$1\" >/dev/null 2>&1 & echo $!; sleep 1; kill -0 $! && echo alive",
                Self.formsync.path, folder.path,
            ])
        #expect(run.termination == .exit(0))
        let lines = run.output.split(separator: "\n")
        #expect(lines.last == "alive", "the server was not running while its parent was")
        let pid = try #require(lines.first.flatMap { Int32($0) }, "\(run.output)")
        let deadline = Date().addingTimeInterval(10)
        while !Self.ended(pid) && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let ended = Self.ended(pid)
        if !ended { kill(pid, SIGKILL) }
        #expect(ended, "the orphaned server \(pid) was still running 10 s after its parent exited")
    }

    @Test func aChildGetsNoDescriptorButTheStandardStreams() async throws {
        // Opened without close-on-exec, as a careless library might.
        let leaky = open("/dev/null", O_RDONLY)
        try #require(leaky > 2)
        defer { close(leaky) }
        let run = try await ChildProcess.run("/bin/sh", ["-c", "if [ -e /proc/$$/fd/\(leaky) ]; then echo leaked; else echo closed; fi"])
        #expect(run.output == "closed\n")
    }

    @Test func aParentPidThatIsNotTheParentEndsTheToolAndGarbageIsIgnored() async throws {
        let tool = Self.formsync.path
        // Not its parent: it exits at once (70) rather than outlive whoever set it.
        let stranger = try await ChildProcess.run(tool, ["--version"], environment: ["FORMSYNC_PARENT_PID": "999999999"])
        #expect(stranger.termination == .exit(70))
        for garbage in ["", "1", "0", "-5", "abc", "99999999999999999999"] {
            let run = try await ChildProcess.run(tool, ["--version"], environment: ["FORMSYNC_PARENT_PID": garbage])
            #expect(run.termination == .exit(0), "FORMSYNC_PARENT_PID=\(garbage): \(run.errors)")
        }
    }

    @Test func aChildReportsHowItEnded() async throws {
        #expect(try await ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"]) == (.exit(3), "out\n", "err\n"))
        let sleeper = try ChildProcess("/bin/sleep", ["30"])
        #expect(sleeper.isRunning)
        sleeper.signal(SIGKILL)
        #expect(sleeper.waitUntilExit() == .signal(SIGKILL))
        #expect(!sleeper.isRunning)
        #expect(throws: ChildProcess.LaunchError.self) { try ChildProcess("/nonexistent/formsync", []) }
    }

    /// A harness that waits for a child on one thread kills it from another (a server's hook,
    /// at a chosen moment): the waiting must not hold what `isRunning` and `signal` need.
    /// Before, the wait held the child's lock until the child ended on its own.
    @Test func aChildBeingWaitedForCanStillBeAskedAndSignalled() async throws {
        let sleeper = try ChildProcess("/bin/sleep", ["600"])
        let waited = DispatchSemaphore(value: 0)
        let ended = Mutex<ChildProcess.Termination?>(nil)
        Thread.detachNewThread {
            waited.signal()
            ended.withLock { $0 = sleeper.waitUntilExit() }
            waited.signal()
        }
        let answered = await OffThePool.run { () -> Bool in
            waited.wait()
            usleep(200_000)  // lets the waiter reach its wait (on a correct child it need not have)
            let asked = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                _ = sleeper.isRunning
                sleeper.signal(SIGKILL)
                asked.signal()
            }
            // The bound only ends the test on the old code (where the answer came after 600 s).
            return asked.wait(timeout: .now() + 60) == .success
        }
        if !answered { kill(sleeper.pid, SIGKILL) }
        #expect(answered, "isRunning and signal waited for the child to end")
        await OffThePool.run { waited.wait() }
        #expect(ended.withLock { $0 } == .signal(SIGKILL))
    }
}
