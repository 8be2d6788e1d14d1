import FormSyncHTTP
import FormSyncPostgres
import FormSyncTesting
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A throwaway PostgreSQL cluster for tests and the cluster torture: `initdb` into a temporary
/// folder (as `nobody` when run as root, since PostgreSQL refuses root), a postmaster on a
/// loopback port, and everything removed by `destroy()` or at process exit. It can be killed
/// and started again on the same data (`crash()`, `start()`), as the cluster torture does mid-run.
package final class PostgresCluster: @unchecked Sendable {
    /// PostgreSQL is not installed, or would not start; the message says what to do.
    package struct Unavailable: Error, CustomStringConvertible {
        package var description: String
    }

    /// How to install what the tests need, printed when it is missing.
    package static let installHint =
        "install PostgreSQL to run these tests: apt-get install postgresql libpq-dev (the tests start their own throwaway cluster)"

    package let folder: String
    package private(set) var port: UInt16
    private let binaries: String
    private let user: (uid: uid_t, gid: gid_t)?
    private let lock = NSLock()
    private var postmaster: ChildProcess?
    private var databases = 0

    /// The one cluster a test process shares: started at first use, removed at exit.
    package static func shared() throws -> PostgresCluster {
        try sharedCluster.withLock { cluster in
            if let cluster { return cluster }
            let made = try PostgresCluster()
            cluster = made
            atexit { PostgresCluster.sharedCluster.withLock { $0?.destroy() } }
            return made
        }
    }
    private static let sharedCluster = Mutex<PostgresCluster?>(nil)

    /// Creates and starts a new cluster.
    package init() throws {
        guard let binaries = Self.findBinaries() else { throw Unavailable(description: Self.installHint) }
        self.binaries = binaries
        Self.sweepAbandoned()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-pg-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "\(getpid())".write(toFile: folder + "/owner.pid", atomically: true, encoding: .utf8)
        if geteuid() == 0 {
            guard let entry = getpwnam("nobody") else {
                throw Unavailable(description: "running as root, and there is no user nobody to run PostgreSQL as")
            }
            user = (entry.pointee.pw_uid, entry.pointee.pw_gid)
            chown(folder, entry.pointee.pw_uid, entry.pointee.pw_gid)
        } else {
            user = nil
        }
        port = 0
        let (status, output) = try runAs(
            binaries + "/initdb", ["-D", folder + "/data", "-U", "formsync", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"])
        guard status == .exit(0) else {
            destroy()
            throw Unavailable(description: "initdb failed (\(status)): \(output.suffix(600))")
        }
        try start()
    }

    /// `postgres://formsync@127.0.0.1:PORT/DATABASE`.
    package func url(database: String = "postgres") -> String { "postgres://formsync@127.0.0.1:\(port)/\(database)" }

    /// A new empty database in the cluster, and its URL: each test gets its own.
    package func makeDatabase() throws -> String {
        let name = lock.withLock { () -> String in
            databases += 1
            return "t\(getpid())_\(databases)"
        }
        let admin = try PostgresConnection(url: url())
        try admin.run("CREATE DATABASE \(name)")
        return url(database: name)
    }

    /// Starts the postmaster (again) on the cluster's data and waits until it takes connections.
    package func start() throws {
        var lastError = ""
        for _ in 0..<5 {
            let chosen = port == 0 ? Self.freePort() : port
            let log = folder + "/postgres.log"
            // One test process runs dozens of servers on this cluster at once, each holding its
            // workers' connections and a listener's: 197 were seen open at once on two cores, and
            // a busier machine runs more tests side by side. A refused connection would fail a
            // test on a count, not on a behaviour.
            let arguments = [
                "-D", folder + "/data", "-p", String(chosen), "-k", folder, "-c", "listen_addresses=127.0.0.1", "-c",
                "max_connections=1000",
                "-c", "shared_buffers=64MB", "-c", "fsync=on", "-c", "synchronous_commit=on",
            ]
            let child = try spawnAs(binaries + "/postgres", arguments, log: log)
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline && child.isRunning {
                // Only our own postmaster counts: the port was free when chosen, but another
                // process's cluster may have taken it since, and answering there would send this
                // cluster's users to another test's database.
                if let connection = try? PostgresConnection(url: "postgres://formsync@127.0.0.1:\(chosen)/postgres", timeoutSeconds: 2),
                    Self.isOurs(connection, data: folder + "/data")
                {
                    lock.withLock {
                        postmaster = child
                        port = chosen
                    }
                    return
                }
                usleep(50_000)
            }
            child.signal(SIGKILL)
            child.waitUntilExit()
            lastError = (try? String(contentsOfFile: log, encoding: .utf8))?.suffix(600).description ?? ""
        }
        throw Unavailable(description: "PostgreSQL did not start: \(lastError)")
    }

    /// Whether `connection` reaches the postmaster of the data directory `data`.
    static func isOurs(_ connection: PostgresConnection, data: String) -> Bool {
        guard let served = try? connection.query("SHOW data_directory").text(0, 0) else { return false }
        let resolve = { (path: String) in URL(fileURLWithPath: path).resolvingSymlinksInPath().standardizedFileURL.path }
        return resolve(served) == resolve(data)
    }

    /// Kills PostgreSQL at once, the postmaster and every backend with it (SIGKILL, as a crash
    /// of its machine would); `start()` brings it back. (Backends left alive after their
    /// postmaster would go on answering their connections for a moment.)
    package func crash() {
        guard
            let child = lock.withLock({ () -> ChildProcess? in
                defer { postmaster = nil }
                return postmaster
            })
        else { return }
        // Frozen first, so that it forks no backend between the listing and the kill.
        child.signal(SIGSTOP)
        let backends = Self.children(of: child.pid)
        for pid in backends { _ = kill(pid, SIGKILL) }
        child.signal(SIGKILL)
        child.waitUntilExit()
        for _ in 0..<400 where backends.contains(where: { kill($0, 0) == 0 }) { usleep(10_000) }
    }

    /// The processes whose parent is `parent`.
    private static func children(of parent: pid_t) -> [pid_t] {
        #if canImport(Darwin)
            // No /proc: pgrep lists a parent's children.
            let pgrep = Process()
            pgrep.executableURL = URL(fileURLWithPath: "/usr/bin/pgrep")
            pgrep.arguments = ["-P", String(parent)]
            let output = Pipe()
            pgrep.standardOutput = output
            guard (try? pgrep.run()) != nil else { return [] }
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            pgrep.waitUntilExit()
            return text.split(separator: "\n").compactMap { pid_t($0) }
        #elseif canImport(Glibc) || canImport(Musl)
            return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { name -> pid_t? in
                guard let pid = pid_t(name), let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { return nil }
                // "pid (comm) state ppid …": the fields after the command's closing parenthesis.
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                return fields.count > 1 && pid_t(fields[1]) == parent ? pid : nil
            }
        #endif
    }

    /// Stops the postmaster and removes the cluster's folder.
    package func destroy() {
        if let child = lock.withLock({ () -> ChildProcess? in
            defer { postmaster = nil }
            return postmaster
        }) {
            child.signal(SIGQUIT)
            child.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    // MARK: Plumbing

    private func runAs(_ executable: String, _ arguments: [String]) throws -> (ChildProcess.Termination, String) {
        let log = folder + "/\((executable as NSString).lastPathComponent).log"
        let child = try spawnAs(executable, arguments, log: log)
        let status = child.waitUntilExit()
        return (status, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    private func spawnAs(_ executable: String, _ arguments: [String], log: String) throws -> ChildProcess {
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        if let user {
            chown(log, user.uid, user.gid)
            let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
            guard let setpriv else {
                throw Unavailable(description: "running as root needs setpriv (util-linux) to start PostgreSQL as nobody")
            }
            return try ChildProcess(
                setpriv, ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", "--", executable] + arguments,
                environment: ["HOME": folder, "LC_ALL": "C"], directory: folder, standardOutput: .file(log), standardError: .file(log))
        }
        return try ChildProcess(
            executable, arguments, environment: ["LC_ALL": "C"], directory: folder, standardOutput: .file(log), standardError: .file(log))
    }

    /// The folder holding `initdb` and `postgres`: `FORMSYNC_PG_BIN` (only there, when it is
    /// set), else the `PATH`, then Debian's `/usr/lib/postgresql/N/bin` (newest first).
    static func findBinaries() -> String? {
        var candidates: [String] = []
        if let given = ProcessInfo.processInfo.environment["FORMSYNC_PG_BIN"] {
            candidates.append(given)
            return found(in: candidates)
        }
        candidates += (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap(Int.init).sorted(
            by: >)
        candidates += versions.map { "/usr/lib/postgresql/\($0)/bin" }
        return found(in: candidates)
    }

    private static func found(in candidates: [String]) -> String? {
        for folder in candidates {
            let initdb = URL(fileURLWithPath: folder + "/initdb").resolvingSymlinksInPath().path
            let postgres = URL(fileURLWithPath: folder + "/postgres").resolvingSymlinksInPath().path
            if FileManager.default.isExecutableFile(atPath: initdb), FileManager.default.isExecutableFile(atPath: postgres) {
                return (initdb as NSString).deletingLastPathComponent
            }
        }
        return nil
    }

    /// Clusters left by a test process that died: their postmaster is stopped and their folder removed.
    private static func sweepAbandoned() {
        let temporary = FileManager.default.temporaryDirectory.path
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [] where name.hasPrefix("formsync-pg-") {
            let folder = temporary + "/" + name
            guard
                let owner = (try? String(contentsOfFile: folder + "/owner.pid", encoding: .utf8)).flatMap({
                    pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
                }),
                kill(owner, 0) != 0 && errno == ESRCH
            else { continue }
            if let line = (try? String(contentsOfFile: folder + "/data/postmaster.pid", encoding: .utf8))?.split(separator: "\n").first,
                let pid = pid_t(line)
            {
                _ = kill(pid, SIGQUIT)
            }
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    private static func freePort() -> UInt16 {
        let fd = Socket.tcp()
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                _ = bind(fd, pointer, length)
                return getsockname(fd, pointer, &length)
            }
        }
        return UInt16(bigEndian: address.sin_port)
    }
}
