import FieldForms
import FormSyncClient
import FormSyncModel
import Foundation
import Synchronization

/// `formsync demo-device`: one worker's device during the demo, run as its own process so the
/// demo can kill it mid-flush. It syncs its outbox until nothing can go out, then exits.
enum DemoDeviceCommand {
    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--db", "--server", "--refresh-token", "--timeout", "--lease-ms"])
        let timeout = try args.integer("--timeout", default: 3)
        let lease = try args.integer("--lease-ms", default: 8000)
        guard timeout >= 1, lease > timeout * 1000 else { throw UsageError("--lease-ms must exceed --timeout (seconds, at least 1)") }
        guard let db = args.values["--db"], let server = args.values["--server"].flatMap(URL.init(string:)),
            let refreshToken = args.values["--refresh-token"]
        else { throw UsageError("demo-device needs --db, --server and --refresh-token") }
        let token = Mutex<String?>(nil)
        let transport = HTTPTransport(baseURL: server, timeout: TimeInterval(timeout), maxConnections: 3) { token.withLock { $0 } }
        let outbox = try Outbox(
            path: db, workspace: "demo", forms: FormCatalog.forms, transport: transport,
            configuration: Outbox.Configuration(
                concurrency: 3, retry: RetryPolicy(baseDelayMilliseconds: 200, maxDelayMilliseconds: 2000, maxAttempts: 60),
                leaseMilliseconds: Int64(lease)),
            refreshAuthentication: {
                guard let fresh = await transport.refreshAccessToken(refreshToken: refreshToken) else { return false }
                token.withLock { $0 = fresh }
                return true
            })
        let deadline = Date().addingTimeInterval(55)
        while Date() < deadline {
            let report = await outbox.flush()
            printNow("flush: \(report)")
            if report.remaining == 0 { return 0 }
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let next = try await outbox.items(in: [.savedOnDevice, .sending]).map(\.nextAttemptAt).min() ?? now
            try await Task.sleep(for: .milliseconds(min(1000, max(50, next - now))))
        }
        return 1
    }
}
