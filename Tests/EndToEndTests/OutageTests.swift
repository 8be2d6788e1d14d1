import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ten minutes with no server at all, on a virtual clock, through the real HTTP stack: the
/// engine stops draining at the first refused connection, probes once per backoff step, and
/// delivers everything exactly once when the server is back.
struct OutageTests {
    /// The real HTTP transport, with every send and probe counted (and whether it fell in the outage).
    final class Counted: OutboxTransport, @unchecked Sendable {
        let inner: HTTPTransport
        let tally = Mutex((sends: 0, sendsDuringOutage: 0, probes: 0, probesDuringOutage: 0))
        let outage: @Sendable () -> Bool
        var workspace: String { inner.workspace }

        init(_ inner: HTTPTransport, outage: @escaping @Sendable () -> Bool) {
            self.inner = inner
            self.outage = outage
        }

        func send(_ request: OutboundRequest) async -> DeliveryOutcome {
            let down = outage()
            tally.withLock {
                $0.sends += 1
                if down { $0.sendsDuringOutage += 1 }
            }
            return await inner.send(request)
        }

        func probe() async -> Bool {
            let down = outage()
            tally.withLock {
                $0.probes += 1
                if down { $0.probesDuringOutage += 1 }
            }
            return await inner.probe()
        }
    }

    /// A TCP port bound but not listening: connections to it are refused, and no other socket
    /// can bind it until `release()`.
    final class PortHold: Sendable {
        private let fd: Mutex<Int32>

        init(_ port: UInt16) throws {
            #if canImport(Glibc)
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #else
                let fd = socket(AF_INET, SOCK_STREAM, 0)
            #endif
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard fd >= 0, bound == 0 else {
                if fd >= 0 { close(fd) }
                throw POSIXError(.EADDRINUSE)
            }
            self.fd = Mutex(fd)
        }

        func release() {
            fd.withLock {
                if $0 >= 0 { close($0) }
                $0 = -1
            }
        }

        deinit { release() }
    }

    @Test func aTenMinuteOutageLosesNothingExhaustsNothingAndSendsAProbePerBackoffStep() async throws {
        let world = try World()
        let port = world.server.port
        let down = Mutex(true)
        let transport = Counted(world.transport(), outage: { down.withLock { $0 } })
        let clock = world.clock
        let outbox = try Outbox(
            path: world.directory.appendingPathComponent("outage.sqlite").path, forms: FormCatalog.forms, transport: transport,
            configuration: Outbox.Configuration(concurrency: 4, retry: RetryPolicy(maxAttempts: 3)),
            environment: OutboxEnvironment(now: { clock.now }, random: { 0.5 }, newID: OutboxEnvironment.live.newID))
        var documents: [String] = []
        for n in 0..<30 {
            let id = try await outbox.enqueue(salesOrder(customer: Int64(n % 10 + 1), lines: 1 + n % 5, marker: "o\(n)"))
            documents.append(try #require(try await outbox.item(id)).documentID)
        }
        // No server at all: every connection is refused. The port stays bound (not listening)
        // through the outage, so no other test's server can take it and answer in its place.
        world.server.stop()
        let hold = try PortHold(port)
        let start = clock.now
        let end = start + 10 * 60_000
        let server = world.server
        let engine = SyncEngine(
            outbox: outbox, environment: OutboxEnvironment(now: { clock.now }, random: { 0.5 }, newID: { "" }),
            sleep: { milliseconds in
                clock.advance(by: milliseconds)
                if clock.now >= end, down.withLock({ $0 }) {
                    hold.release()
                    do { _ = try server.start(port: port) } catch { Issue.record("the server did not come back on port \(port): \(error)") }
                    down.withLock { $0 = false }
                }
                await Task.yield()
            })
        let running = Task { await engine.run() }
        for _ in 0..<3000 {
            if await outbox.stateCounts() == [.confirmed: 30] { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        running.cancel()
        await running.value
        #expect(await outbox.stateCounts() == [.confirmed: 30])
        #expect(clock.now >= end)
        let held = world.server.documents()
        #expect(held.count == 30)
        #expect(Set(held.map(\.documentID)) == Set(documents))
        #expect(held.allSatisfy { $0.appliedWrites == 1 })
        let tally = transport.tally.withLock { $0 }
        // During the outage: the first pass's requests already on the wire, then probes only.
        #expect(tally.sendsDuringOutage <= 4, "\(tally)")
        #expect(tally.probesDuringOutage >= 5, "\(tally)")
        #expect(tally.probesDuringOutage <= 15, "\(tally)")
        #expect(try await outbox.parkedItems().isEmpty)
    }
}
