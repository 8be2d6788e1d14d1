import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A child process started with `posix_spawn`, for tests and harnesses that run the real tool.
///
/// Not Foundation's `Process`: on this toolchain `Process.run()` walks `/proc/self/fd` and
/// over-reads glibc's directory buffer when the test process has many descriptors open
/// (swift-corelibs-foundation #5472); it crashed the suite twice. The child is told its
/// parent's pid (`FORMSYNC_PARENT_PID`): `formsync` exits when that parent is gone, so a
/// crashed test run leaves no server holding the runner's output pipe open.
public final class ChildProcess: @unchecked Sendable {
    /// Where a standard stream of the child goes.
    public enum Stream: Sendable {
        /// The parent's own stream.
        case inherit
        /// `/dev/null`.
        case discard
        /// A file, created or truncated, appended to (so output and errors can share it).
        case file(String)
        /// A pipe the parent reads (`output` / `errors`).
        case pipe
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable {
        /// It exited with this status.
        case exit(Int32)
        /// This signal ended it.
        case signal(Int32)
    }

    /// A child process failed to start.
    public struct LaunchError: Error, CustomStringConvertible {
        /// The program that did not start.
        public var executable: String
        /// Why, from the system.
        public var reason: String
        /// "cannot start PATH: REASON".
        public var description: String { "cannot start \(executable): \(reason)" }
    }

    /// The child's process id.
    public let pid: pid_t
    /// The read end of the child's standard output, when it is `.pipe`.
    public let output: FileHandle?
    /// The read end of the child's standard error, when it is `.pipe`.
    public let errors: FileHandle?

    private let lock = NSLock()
    private var ended: Termination?

    /// Starts `executable` with `arguments`, the parent's environment plus `environment`, in
    /// `directory` (the parent's when nil).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil,
        standardOutput: Stream = .inherit, standardError: Stream = .inherit
    ) throws {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            throw LaunchError(executable: executable, reason: "this platform does not let an app start processes")
        #else
            var spawn = SpawnActions()
            defer { spawn.destroy() }
            var parentEnds: [Int32] = [-1, -1]
            var childEnds: [Int32] = []
            defer { for fd in childEnds { close(fd) } }
            func failure(_ what: String) -> LaunchError {
                LaunchError(executable: executable, reason: "\(what): \(String(cString: strerror(errno)))")
            }
            for (index, (stream, target)) in [(standardOutput, STDOUT_FILENO), (standardError, STDERR_FILENO)].enumerated() {
                switch stream {
                case .inherit:
                    spawn.inherit(target)
                case .discard:
                    spawn.open(target, "/dev/null", O_WRONLY, 0)
                case .file(let path):
                    spawn.open(target, path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o644)
                case .pipe:
                    var ends: [Int32] = [-1, -1]
                    guard SpawnActions.closeOnExecPipe(&ends) == 0 else {
                        for fd in parentEnds where fd >= 0 { close(fd) }
                        throw failure("pipe")
                    }
                    parentEnds[index] = ends[0]
                    childEnds.append(ends[1])
                    spawn.duplicate(ends[1], to: target)
                }
            }
            spawn.inherit(STDIN_FILENO)
            if let directory { spawn.changeDirectory(to: directory) }
            // Nothing but the three standard streams reaches the child: a socket or pipe the test
            // process opened without close-on-exec must not stay open in a server that outlives it.
            spawn.closeTheRest()
            var merged = ProcessInfo.processInfo.environment
            merged["FORMSYNC_PARENT_PID"] = String(getpid())
            for (key, value) in environment { merged[key] = value }
            let argv = ([executable] + arguments).map { strdup($0) } + [nil]
            let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer {
                for pointer in argv { free(pointer) }
                for pointer in envp { free(pointer) }
            }
            var child: pid_t = 0
            let rc = spawn.spawn(&child, executable, argv, envp)
            guard rc == 0 else {
                for fd in parentEnds where fd >= 0 { close(fd) }
                throw LaunchError(executable: executable, reason: String(cString: strerror(rc)))
            }
            pid = child
            output = parentEnds[0] >= 0 ? FileHandle(fileDescriptor: parentEnds[0], closeOnDealloc: true) : nil
            errors = parentEnds[1] >= 0 ? FileHandle(fileDescriptor: parentEnds[1], closeOnDealloc: true) : nil
        #endif
    }

    /// Whether the child is still running (reaps it when it has ended).
    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        if ended != nil { return false }
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        if rc == pid {
            ended = Self.termination(status)
            return false
        }
        return rc == 0
    }

    /// Blocks until the child ends; how it ended. The wait itself holds no lock: `isRunning`,
    /// `signal` and `termination` answer from other threads meanwhile (a server's hook that
    /// kills the child at a chosen moment must not wait for the child to end first). The child
    /// is reaped only under the lock, so `signal` never reaches a reused pid.
    @discardableResult
    public func waitUntilExit() -> Termination {
        if let ended = termination { return ended }
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        lock.lock()
        defer { lock.unlock() }
        if let ended { return ended }
        var status: Int32 = 0
        while true {
            let rc = waitpid(pid, &status, 0)
            if rc == pid { break }
            if rc < 0 && errno != EINTR {
                ended = .exit(-1)
                return .exit(-1)
            }
        }
        let result = Self.termination(status)
        ended = result
        return result
    }

    /// Blocks reading the child's standard output (a `.pipe`) until what was read contains
    /// `marker` or the output ends; what was read. Call it off the cooperative pool.
    public func readOutput(until marker: String) -> String {
        var text = ""
        while let output, !text.contains(marker) {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        return text
    }

    /// How the child ended, nil while it runs.
    public var termination: Termination? {
        lock.lock()
        defer { lock.unlock() }
        return ended
    }

    /// Sends `signal` (SIGTERM by default) unless the child has already been reaped.
    public func signal(_ signal: Int32 = SIGTERM) {
        lock.lock()
        defer { lock.unlock() }
        if ended == nil { kill(pid, signal) }
    }

    /// Runs `executable` to its end on threads of its own (never one of the concurrency pool's
    /// few threads), with its output and errors collected.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil
    ) async throws -> (termination: Termination, output: String, errors: String) {
        let child = try ChildProcess(
            executable, arguments, environment: environment, directory: directory, standardOutput: .pipe, standardError: .pipe)
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                final class Box: @unchecked Sendable { var data = Data() }
                let errors = Box()
                let done = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    errors.data = child.errors?.readDataToEndOfFile() ?? Data()
                    done.signal()
                }
                let output = child.output?.readDataToEndOfFile() ?? Data()
                done.wait()
                let termination = child.waitUntilExit()
                continuation.resume(
                    returning: (termination, String(decoding: output, as: UTF8.self), String(decoding: errors.data, as: UTF8.self)))
            }
        }
    }

    private static func termination(_ status: Int32) -> Termination {
        let signal = status & 0x7F
        return signal == 0 ? .exit((status >> 8) & 0xFF) : .signal(signal)
    }
}

#if !(os(iOS) || os(tvOS) || os(watchOS) || os(visionOS))
    /// What the child gets besides its program: its standard streams, its folder, and no other
    /// descriptor. The C library spells each differently on each platform.
    private struct SpawnActions {
        #if canImport(Darwin)
            var actions: posix_spawn_file_actions_t?
            var attributes: posix_spawnattr_t?

            init() {
                posix_spawn_file_actions_init(&actions)
                posix_spawnattr_init(&attributes)
            }

            mutating func destroy() {
                posix_spawn_file_actions_destroy(&actions)
                posix_spawnattr_destroy(&attributes)
            }

            /// With `POSIX_SPAWN_CLOEXEC_DEFAULT` a stream the child keeps must be named.
            mutating func inherit(_ fd: Int32) { posix_spawn_file_actions_addinherit_np(&actions, fd) }

            mutating func changeDirectory(to path: String) { posix_spawn_file_actions_addchdir_np(&actions, path) }

            mutating func closeTheRest() { posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_CLOEXEC_DEFAULT)) }

            mutating func spawn(
                _ pid: inout pid_t, _ path: String, _ argv: [UnsafeMutablePointer<CChar>?], _ envp: [UnsafeMutablePointer<CChar>?]
            ) -> Int32 {
                posix_spawn(&pid, path, &actions, &attributes, argv, envp)
            }

            /// No `pipe2` here: the ends are marked close-on-exec just after (a child that
            /// another thread starts with Foundation's `Process` in between could inherit them;
            /// ours never do, `POSIX_SPAWN_CLOEXEC_DEFAULT` closes what they are not given).
            static func closeOnExecPipe(_ ends: inout [Int32]) -> Int32 {
                guard pipe(&ends) == 0 else { return -1 }
                for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                return 0
            }
        #elseif canImport(Glibc) || canImport(Musl)
            var actions = posix_spawn_file_actions_t()

            init() { posix_spawn_file_actions_init(&actions) }

            mutating func destroy() { posix_spawn_file_actions_destroy(&actions) }

            /// Inherited unless closed: nothing to name.
            mutating func inherit(_ fd: Int32) {}

            mutating func changeDirectory(to path: String) { _ = Self.addChdir(&actions, path) }

            /// glibc 2.34 and later; without it the child inherits descriptors not marked close-on-exec.
            mutating func closeTheRest() { if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) } }

            mutating func spawn(
                _ pid: inout pid_t, _ path: String, _ argv: [UnsafeMutablePointer<CChar>?], _ envp: [UnsafeMutablePointer<CChar>?]
            ) -> Int32 {
                posix_spawn(&pid, path, &actions, nil, argv, envp)
            }

            /// `pipe2` makes both ends close-on-exec atomically, so a pipe never leaks into another
            /// child started at the same moment (which would hold its write end open).
            static func closeOnExecPipe(_ ends: inout [Int32]) -> Int32 { pipe2(&ends, O_CLOEXEC) }

            // Functions the Glibc module does not import (they are behind _GNU_SOURCE): looked up once.
            private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
            private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
            private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
            private static let pipe2: Pipe2 = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2")!, to: Pipe2.self)
            private static let addCloseFrom: AddCloseFrom? = dlsym(
                UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np"
            )
            .map { unsafeBitCast($0, to: AddCloseFrom.self) }
            private static let addChdir: AddChdir = unsafeBitCast(
                dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np")!, to: AddChdir.self)
        #endif

        mutating func open(_ fd: Int32, _ path: String, _ flags: Int32, _ mode: mode_t) {
            posix_spawn_file_actions_addopen(&actions, fd, path, flags, mode)
        }

        mutating func duplicate(_ fd: Int32, to target: Int32) {
            posix_spawn_file_actions_adddup2(&actions, fd, target)
        }
    }
#endif
