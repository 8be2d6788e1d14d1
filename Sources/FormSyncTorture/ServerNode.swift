import FormSyncTesting
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One `formsync serve --database URL` process: started, SIGKILLed and started again on the
/// same port, as a node of a cluster is by its supervisor.
package final class ServerNode: @unchecked Sendable {
    let executable: String
    let database: String
    let log: String
    private let lock = NSLock()
    private var process: ChildProcess?
    package private(set) var port: UInt16 = 0

    package init(executable: String, database: String, log: String) {
        self.executable = executable
        self.database = database
        self.log = log
    }

    package var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Starts the node (on its old port once it has one, with `--migrate`) and waits until it
    /// serves; throws with the end of its output when it does not within 30 s.
    package func start() throws {
        let port = lock.withLock { self.port }
        let child = try ChildProcess(
            executable, ["serve", "--database", database, "--migrate", "--port", String(port), "--workspace", TortureDevice.workspace],
            standardOutput: .file(log), standardError: .file(log))
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("FormSync reference server on http://") }),
                let found = line.split(separator: ":").last.flatMap({ UInt16($0) }), text.contains("access token:")
            {
                lock.withLock {
                    self.port = found
                    process = child
                }
                return
            }
            guard child.isRunning else { break }
            usleep(10_000)
        }
        child.signal(SIGKILL)
        child.waitUntilExit()
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        throw TortureError("server node on port \(port) did not start:\n\(text.suffix(2000))")
    }

    /// SIGKILLs the node, as a crash would.
    package func kill() {
        guard
            let child = lock.withLock({ () -> ChildProcess? in
                defer { process = nil }
                return process
            })
        else { return }
        child.signal(SIGKILL)
        child.waitUntilExit()
    }

    /// Whether its process still runs.
    package var isRunning: Bool { lock.withLock { process }?.isRunning ?? false }

    /// Stops the node (SIGTERM) and waits for it.
    package func stop() {
        guard
            let child = lock.withLock({ () -> ChildProcess? in
                defer { process = nil }
                return process
            })
        else { return }
        child.signal(SIGTERM)
        child.waitUntilExit()
    }
}
