import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `formsync bench http`: flushing the outbox over loopback HTTP against the raw rate of the
/// same POSTs sent straight with URLSession at the same concurrency, in one run, against one
/// embedded reference server.
enum HTTPBenchmark {
    static func run(items: Int, concurrency: Int) async throws -> Int32 {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-bench-http-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms)
        _ = try server.start()
        defer { server.stop() }
        let token = server.issueAccessToken()
        print("http benchmark: \(items) SalesOrder submissions over loopback, concurrency \(concurrency), reference server")

        // Baseline: the same requests, built up front, sent straight with URLSession.
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = concurrency
        let session = URLSession(configuration: configuration)
        let requests = try salesOrderRequests(items, server: server, token: token, tag: "raw")
        let rawStart = DispatchTime.now().uptimeNanoseconds
        let created = await send(requests, through: session, concurrency: concurrency)
        let raw = OutboxBenchmark.seconds(since: rawStart)
        guard created == items else { throw BenchmarkFailure(message: "baseline: only \(created) of \(items) created") }

        // The outbox: enqueue (not timed), then flush through HTTPTransport.
        let transport = HTTPTransport(workspace: "bench", baseURL: server.baseURL, timeout: 20, maxConnections: concurrency) { token }
        let outbox = try Outbox(
            path: folder.appendingPathComponent("device.sqlite").path, forms: FormCatalog.forms,
            transport: transport, configuration: Outbox.Configuration(concurrency: concurrency))
        for n in 0..<items { try await outbox.enqueue(OutboxBenchmark.order(customer: Int64(items + n + 1))) }
        let flushStart = DispatchTime.now().uptimeNanoseconds
        let report = await outbox.flush()
        let flush = OutboxBenchmark.seconds(since: flushStart)
        guard report.sent == items, server.documents().count == 2 * items else {
            throw BenchmarkFailure(message: "outbox: \(report), server holds \(server.documents().count)")
        }
        print("  baseline: URLSession POSTs, \(concurrency) in flight: \(OutboxBenchmark.rate(items, raw)) requests/s (\(String(format: "%.2f", raw)) s)")
        print("  outbox flush via HTTPTransport:             \(OutboxBenchmark.rate(items, flush)) items/s (\(String(format: "%.2f", flush)) s)")
        print("  ratio outbox / raw throughput: \(OutboxBenchmark.ratio(raw, flush))")
        return 0
    }

    /// `count` ready-to-send `SalesOrder` creates, keys and document ids prefixed with `tag`.
    static func salesOrderRequests(_ count: Int, server: SyncServer, token: String, tag: String) throws -> [URLRequest] {
        try (0..<count).map { n in
            let order = OutboxBenchmark.order(customer: Int64(n + 1))
            var request = URLRequest(url: server.baseURL.appendingPathComponent(order.endpoint))
            request.httpMethod = "POST"
            request.httpBody = try FormRegistry.encode(order)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue("\(tag)-\(n)", forHTTPHeaderField: "Idempotency-Key")
            request.setValue("\(tag)-doc-\(n)", forHTTPHeaderField: "FormSync-Document")
            request.setValue("SalesOrder; version=\(SalesOrder.formVersion)", forHTTPHeaderField: "FormSync-Form")
            return request
        }
    }

    /// Sends `requests` keeping `concurrency` in flight; how many were answered 201.
    static func send(_ requests: [URLRequest], through session: URLSession, concurrency: Int) async -> Int {
        await withTaskGroup(of: Int.self) { group -> Int in
            var next = 0
            var ok = 0
            func add() {
                let request = requests[next]
                next += 1
                group.addTask { ((try? await session.data(for: request))?.1 as? HTTPURLResponse)?.statusCode == 201 ? 1 : 0 }
            }
            for _ in 0..<min(concurrency, requests.count) { add() }
            while let result = await group.next() {
                ok += result
                if next < requests.count { add() }
            }
            return ok
        }
    }
}
