import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncSQLite
import FormSyncServer
import FormSyncTesting
import FormSyncTorture
import Foundation
import Synchronization
import Testing

/// The whole system on one machine: the reference server on an ephemeral 127.0.0.1 port with
/// its SQLite file, and devices whose outboxes (each its own SQLite file) send through the real
/// HTTP transport. `device(_:)` opens an outbox again on the same file, as a restarted app does.
final class World: @unchecked Sendable {
    let directory: URL
    let server: SyncServer
    let clock = ManualClock(1_800_000_000_000)
    let refreshToken: String
    private let token: Mutex<String?>
    let refreshes = Mutex(0)
    /// The transport's timeout between bytes: out of the way (a loaded machine can pause a reply for
    /// seconds), except in the tests about timeouts, which set their own.
    var timeout: TimeInterval = 120
    var concurrency = 4
    private let watch = TestRunWatchdog.enter(Test.current?.name ?? "?")
    /// The workspaces the world's tokens are issued for (devices, the demo device, conformance).
    static let workspaces = ["acme", "demo", "conformance"]

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        server = try TestStore.server(
            directory: directory.appendingPathComponent("server").path, forms: FormCatalog.forms, records: FormCatalog.records)
        _ = try server.start()
        refreshToken = try server.issueRefreshToken(workspaces: Self.workspaces)
        token = Mutex(try server.issueAccessToken(workspaces: Self.workspaces))
    }

    deinit {
        TestRunWatchdog.leave(watch)
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Access tokens of principals other than the default one, by principal.
    private let principalTokens = Mutex<[String: String]>([:])

    func transport(workspace: String = "acme", principal: String? = nil) -> HTTPTransport {
        if let principal {
            let token = principalTokens.withLock { tokens in
                if let token = tokens[principal] { return token }
                // A token the server could not store is no token: every request says 401.
                let token = (try? server.issueAccessToken(principal: principal, workspaces: Self.workspaces)) ?? "unissued"
                tokens[principal] = token
                return token
            }
            return HTTPTransport(workspace: workspace, baseURL: server.baseURL, timeout: .seconds(timeout), maxConnections: concurrency) {
                token
            }
        }
        return HTTPTransport(workspace: workspace, baseURL: server.baseURL, timeout: .seconds(timeout), maxConnections: concurrency) {
            [self] in
            token.withLock { $0 }
        }
    }

    /// The outbox of device `name`, opened (again) on its own database file; `principal` is
    /// who its token acts for (the default principal when nil).
    func device(_ name: String = "phone", workspace: String = "acme", principal: String? = nil) throws -> Outbox {
        let transport = transport(workspace: workspace, principal: principal)
        let clock = self.clock
        let refreshToken = self.refreshToken
        return try Outbox(
            path: directory.appendingPathComponent("\(name).sqlite").path, forms: FormCatalog.forms, records: FormCatalog.records,
            transport: transport,
            configuration: Outbox.Configuration(
                concurrency: concurrency,
                retry: RetryPolicy(baseDelay: .milliseconds(1000), maxDelay: .milliseconds(30_000), maxAttempts: 8),
                lease: .milliseconds(60_000)),
            environment: OutboxEnvironment(now: { clock.now }, random: { 0.5 }, newID: OutboxEnvironment.live.newID),
            refreshAuthentication: { [self] in
                refreshes.withLock { $0 += 1 }
                guard let fresh = await transport.refreshAccessToken(refreshToken: refreshToken) else { return false }
                token.withLock { $0 = fresh }
                return true
            })
    }

    /// Flushes, reopening the device between rounds and moving the clock past any backoff,
    /// until nothing can go out or `rounds` is reached.
    func drain(_ name: String = "phone", principal: String? = nil, rounds: Int = 10) async throws -> FlushReport {
        var total = FlushReport()
        for _ in 0..<rounds {
            let outbox = try device(name, principal: principal)
            let report = await outbox.flush()
            total.sent += report.sent
            total.rejected += report.rejected
            total.conflicts += report.conflicts
            total.exhausted += report.exhausted
            total.remaining = report.remaining
            if report.remaining == 0 { break }
            clock.advance(by: 60_000)
        }
        return total
    }

    func file(_ name: String, bytes: Int) throws -> URL {
        let url = directory.appendingPathComponent(name)
        var generator = SystemRandomNumberGenerator()
        try MediaSignature.stamped(Data((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) }), asFileNamed: name).write(
            to: url)
        return url
    }

    /// Submissions the server saw, in order, as (path, status).
    var submissionLog: [(String, Int?)] {
        server.requestLog().filter { $0.method == "POST" && $0.path != "/files" && $0.path != "/auth/refresh" }.map { ($0.path, $0.status) }
    }
}

func salesOrder(customer: Int64, lines: Int = 1, marker: String = "") -> SalesOrder {
    SalesOrder(
        customerId: EntityRef(customer), orderDate: LocalDate("2026-11-30"), customerReference: marker.isEmpty ? nil : marker,
        lines: (0..<lines).map { n in
            .init(sku: "SKU-\(1000 + n)", quantity: n % 7 + 1, unitPrice: Money(minorUnits: Int64(100 + n), currency: "EUR"))
        })
}
