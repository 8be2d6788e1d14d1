import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncHTTP
import FormSyncModel
import FormSyncServer
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `formsync-lab bench server`: durable writes per second the reference server takes over loopback
/// with its group commit, against the same server committing each write FULL on its own,
/// rounds interleaved, a fresh server each. The clients are plain keep-alive sockets on
/// threads of their own, with every request serialised beforehand, so that the figure is the
/// server's and not an HTTP client's (URLSession tops out near 1,500 requests/s here).
enum ServerBenchmark {
    /// The identities the prepared requests carry.
    enum Identities: String {
        /// The live environment's (time-ordered, version 7), as a device of 0.7.6 and later sends.
        case live
        /// Random version 4 UUIDs, as earlier devices sent: each lands on a random index page.
        case random
    }

    static func identities(_ text: String?) throws -> Identities {
        guard let text else { return .live }
        guard let identities = Identities(rawValue: text) else {
            throw UsageError("--identities takes live or random, not \"\(text.prefix(80))\"")
        }
        return identities
    }

    static func run(items: Int, concurrency: Int, rounds: Int, workers: Int, identities: Identities = .live) throws -> Int32 {
        print(
            "server benchmark: \(items) SalesOrder submissions per round from \(concurrency) keep-alive connections, \(workers) handler threads, \(identities.rawValue) identities, \(rounds) interleaved rounds"
        )
        var grouped: [Double] = []
        var alone: [Double] = []
        var perFsync: [Double] = []
        var cpu: [Double] = []
        var fsyncBusy: [Double] = []
        var fsyncTime: [Double] = []
        for round in 0..<rounds {
            for group in round % 2 == 0 ? [true, false] : [false, true] {
                let run = try measure(items: items, concurrency: concurrency, workers: workers, identities: identities, groupCommit: group)
                if group {
                    grouped.append(run.rate)
                    perFsync.append(Double(items) / Double(max(run.fsyncs, 1)))
                    cpu.append(run.cpu)
                    fsyncBusy.append(run.fsyncSeconds * run.rate / Double(items) * 100)
                    fsyncTime.append(run.fsyncSeconds / Double(max(run.fsyncs, 1)) * 1e6)
                } else {
                    alone.append(run.rate)
                }
            }
        }
        func spread(_ v: [Double]) -> String { String(format: "%.0f/s (%.0f–%.0f)", BenchCommand.median(v), v.min()!, v.max()!) }
        print("  baseline: each write committed FULL on its own: \(spread(alone))")
        print("  group commit (writes share one fdatasync):      \(spread(grouped))")
        print(
            String(
                format:
                    "    writes per fsync %.1f; each fsync %.0f µs, the log in fsync %.0f %% of the time; CPU per write (all threads, clients included) %.0f µs, %.0f %% of the two cores' time",
                BenchCommand.median(perFsync), BenchCommand.median(fsyncTime), BenchCommand.median(fsyncBusy),
                BenchCommand.median(cpu) * 1e6,
                BenchCommand.median(zip(cpu, grouped).map { $0 * $1 / 2 * 100 })))
        print(
            String(
                format: "  ratio: %.2f× (per round %.2f×–%.2f×)", BenchCommand.median(grouped) / BenchCommand.median(alone),
                zip(grouped, alone).map { $0 / $1 }.min()!, zip(grouped, alone).map { $0 / $1 }.max()!))
        return 0
    }

    /// Durable submissions per second: every one answered 201 (the server answers only once
    /// the write is on disk).
    static func measure(
        items: Int, concurrency: Int, workers: Int, identities: Identities, groupCommit: Bool
    ) throws -> (rate: Double, fsyncs: Int, fsyncSeconds: Double, cpu: Double) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-bench-server-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.path, forms: FormCatalog.forms)
        server.groupCommit = groupCommit
        server.workers = workers
        let port = try server.start()
        defer { server.stop() }
        let token = try server.issueAccessToken(workspaces: ["bench"])
        let live = OutboxEnvironment.live
        let identity: () -> String
        switch identities {
        case .live: identity = { live.newID() }
        case .random: identity = { UUID().uuidString.lowercased() }
        }
        let requests = try HTTPBenchmark.salesOrderRequests(items, server: server, token: token, identity: identity).map(serialise)
        let fsyncsBefore = server.fsyncCount
        let fsyncTimeBefore = server.fsyncNanoseconds
        let cpuBefore = EnqueueBenchmark.processCPU()
        let seconds = try drive(requests, ports: [port], concurrency: concurrency)
        let cpu = (EnqueueBenchmark.processCPU() - cpuBefore) / Double(items)
        return (Double(items) / seconds, server.fsyncCount - fsyncsBefore, Double(server.fsyncNanoseconds - fsyncTimeBefore) / 1e9, cpu)
    }

    /// Sends every request from `concurrency` keep-alive connections on threads of their own
    /// (connection n to `ports[n % ports.count]`); the seconds it took. Throws unless every
    /// one was answered 201.
    static func drive(_ requests: [[UInt8]], ports: [UInt16], concurrency: Int) throws -> Double {
        let created = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let done = DispatchGroup()
        let start = DispatchTime.now().uptimeNanoseconds
        for client in 0..<concurrency {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                do {
                    let connection = try Connection(port: ports[client % ports.count])
                    defer { close(connection.fd) }
                    var index = client
                    while index < requests.count {
                        if try connection.send(requests[index]) == 201 { created.add(1, ordering: .relaxed) }
                        index += concurrency
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            thread.start()
        }
        done.wait()
        let seconds = OutboxBenchmark.seconds(since: start)
        if let failure = failures.withLock({ $0.first }) { throw BenchmarkFailure(message: "a client failed: \(failure)") }
        guard created.load(ordering: .relaxed) == requests.count else {
            throw BenchmarkFailure(message: "only \(created.load(ordering: .relaxed)) of \(requests.count) submissions were created")
        }
        return seconds
    }

    static func serialise(_ request: URLRequest) -> [UInt8] {
        let body = request.httpBody ?? Data()
        var head = "\(request.httpMethod ?? "POST") \(request.url!.path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in request.allHTTPHeaderFields ?? [:] where name.lowercased() != "content-length" {
            head += "\(name): \(value)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + Array(body)
    }

    /// One keep-alive connection that sends a request and reads its whole response.
    final class Connection {
        let fd: Int32
        private var buffer: [UInt8] = []

        init(port: UInt16) throws {
            fd = try Self.connectLoopback(port: port)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }

        /// A socket connected to 127.0.0.1:`port`.
        static func connectLoopback(port: UInt16) throws -> Int32 {
            let fd = Socket.tcp()
            guard fd >= 0 else { throw BenchmarkFailure(message: "socket: \(String(cString: strerror(errno)))") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                let code = errno
                close(fd)
                throw BenchmarkFailure(message: "connect: \(String(cString: strerror(code)))")
            }
            return fd
        }

        /// Sends `request`; returns the response's status once its body has been read.
        func send(_ request: [UInt8]) throws -> Int {
            var sent = 0
            while sent < request.count {
                let n = request[sent...].withUnsafeBytes { Socket.send(fd, $0) }
                guard n > 0 else { throw BenchmarkFailure(message: "send: \(String(cString: strerror(errno)))") }
                sent += n
            }
            while true {
                if let (status, length) = Self.parse(buffer) {
                    buffer.removeFirst(length)
                    return status
                }
                var chunk = [UInt8](repeating: 0, count: 16_384)
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw BenchmarkFailure(message: "the server closed the connection") }
                buffer += chunk[..<n]
            }
        }

        /// The status and total length of a complete response at the start of `bytes`, read
        /// byte by byte so that the clients, which share the machine's two cores with the
        /// server, spend as little of them as they can.
        static func parse(_ bytes: [UInt8]) -> (status: Int, length: Int)? {
            guard bytes.count >= 16,
                let end = (0...(bytes.count - 4)).first(where: {
                    bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10
                })
            else { return nil }
            // "HTTP/1.1 201 ...": three digits at offset 9.
            let status = bytes[9..<12].reduce(0) { $0 * 10 + Int($1) - 48 }
            let name = Array("\r\ncontent-length:".utf8)
            var length = 0
            var i = 0
            while i + name.count <= end {
                if zip(bytes[i..<(i + name.count)], name).allSatisfy({ ((65...90).contains($0) ? $0 + 32 : $0) == $1 }) {
                    var j = i + name.count
                    while bytes[j] == 32 { j += 1 }
                    while j < end, (48...57).contains(bytes[j]), length < 1 << 40 {
                        length = length * 10 + Int(bytes[j]) - 48
                        j += 1
                    }
                    break
                }
                i += 1
            }
            guard bytes.count >= end + 4 + length else { return nil }
            return (status, end + 4 + length)
        }
    }
}
