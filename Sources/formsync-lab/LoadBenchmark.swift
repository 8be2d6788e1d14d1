import FieldForms
import FormSyncCommandLine
import FormSyncHTTP
import FormSyncModel
import FormSyncServer
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `formsync-lab bench load`: the reference server's throughput for normal submissions while
/// `slow` connections dribble partial heads at it (slowloris), against the same submissions
/// with no slow connections, rounds interleaved, in one run.
enum LoadBenchmark {
    static func run(items: Int, slow: Int, rounds: Int, concurrency: Int) async throws -> Int32 {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-bench-load-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms)
        let port = try server.start()
        defer { server.stop() }
        let token = try server.issueAccessToken(workspaces: ["bench"])
        print("load benchmark: \(items) SalesOrder submissions per round at concurrency \(concurrency), \(rounds) rounds each,")
        print("  alternating a quiet server with one held by \(slow) slow connections (a byte of a head every 500 ms)")
        var quiet: [Double] = []
        var loaded: [Double] = []
        for round in 1...rounds {
            for withSlow in [false, true] {
                var crowd = SlowCrowd()
                if withSlow { crowd.open(count: slow, port: port) }
                let rate = try await submissions(items, concurrency: concurrency, server: server, token: token)
                if withSlow {
                    let held = crowd.stillOpen()
                    crowd.close()
                    loaded.append(rate)
                    print("  round \(round), \(held) of \(slow) slow connections still open at the end: \(Int(rate)) submissions/s")
                } else {
                    quiet.append(rate)
                    print("  round \(round), quiet: \(Int(rate)) submissions/s")
                }
            }
        }
        let q = median(quiet)
        let l = median(loaded)
        print("  quiet:  median \(Int(q))/s (\(quiet.map { String(Int($0)) }.joined(separator: ", ")))")
        print("  loaded: median \(Int(l))/s (\(loaded.map { String(Int($0)) }.joined(separator: ", ")))")
        print("  loaded / quiet: \(String(format: "%.2f", l / q))")
        return 0
    }

    static func median(_ values: [Double]) -> Double { BenchCommand.median(values) }

    /// Submissions per second for `items` creates at `concurrency`, each checked to be 201.
    static func submissions(_ items: Int, concurrency: Int, server: SyncServer, token: String) async throws -> Double {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = concurrency
        configuration.timeoutIntervalForRequest = 30
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let requests = try HTTPBenchmark.salesOrderRequests(items, server: server, token: token)
        let start = DispatchTime.now().uptimeNanoseconds
        let created = await HTTPBenchmark.send(requests, through: session, concurrency: concurrency)
        let seconds = OutboxBenchmark.seconds(since: start)
        guard created == items else { throw BenchmarkFailure(message: "only \(created) of \(items) submissions were created") }
        return Double(items) / seconds
    }

    /// Connections that each send a byte of a request head every 500 ms from a thread of their own.
    struct SlowCrowd {
        final class Flag: Sendable {
            let raised = Mutex(false)
        }

        private var fds: [Int32] = []
        private var stop: Flag?

        mutating func open(count: Int, port: UInt16) {
            for _ in 0..<count {
                if let fd = try? ServerBenchmark.Connection.connectLoopback(port: port) { fds.append(fd) }
            }
            let flag = Flag()
            stop = flag
            let sockets = fds
            let bytes = Array("POST /customers HTTP/1.1\r\nX-Slow: ".utf8)
            let thread = Thread {
                var index = 0
                while !flag.raised.withLock({ $0 }) {
                    for fd in sockets {
                        let byte = bytes[index % bytes.count]
                        _ = withUnsafeBytes(of: byte) { Socket.send(fd, $0) }
                    }
                    index += 1
                    usleep(500_000)
                }
            }
            thread.start()
        }

        /// How many of the slow connections the server has not closed.
        func stillOpen() -> Int {
            fds.filter { fd in
                var byte: UInt8 = 0
                let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT) | Int32(MSG_PEEK))
                return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
            }.count
        }

        mutating func close() {
            stop?.raised.withLock { $0 = true }
            usleep(600_000)
            for fd in fds { Socket.close(fd) }
            fds = []
        }
    }
}
