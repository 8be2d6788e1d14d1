import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `formsync-lab bench http`: flushing the outbox over loopback HTTP against the raw rate of the
/// same POSTs sent straight with URLSession at the same concurrency. Each round starts a fresh
/// embedded reference server and measures both, in an order that alternates between rounds;
/// the figures are the median (and spread) of the rounds. It also prints the process's CPU time
/// per item on each side (all threads, the in-process server's included): on two cores both
/// sides are CPU-bound, so the ratio follows what the outbox spends on top of the raw POST.
enum HTTPBenchmark {
    static func run(items: Int, concurrency: Int, rounds: Int) async throws -> Int32 {
        print(
            "http benchmark: \(items) SalesOrder submissions over loopback, concurrency \(concurrency), reference server, \(rounds) interleaved rounds"
        )
        var raw: [Double] = []
        var flush: [Double] = []
        var alone: [Double] = []
        var rawCPU: [Double] = []
        var flushCPU: [Double] = []
        var aloneCPU: [Double] = []
        for round in 0..<rounds {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-bench-http-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let server = try SyncServer(directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms)
            _ = try server.start()
            defer { server.stop() }
            let token = try server.issueAccessToken(workspaces: ["bench"])
            for side in round % 2 == 0 ? ["raw", "transport", "outbox"] : ["outbox", "transport", "raw"] {
                if side == "raw" {
                    let run = try await rawPosts(items, server: server, token: token, concurrency: concurrency)
                    raw.append(run.seconds)
                    rawCPU.append(run.cpu / Double(items))
                } else if side == "transport" {
                    let run = try await transportPosts(items, server: server, token: token, concurrency: concurrency)
                    alone.append(run.seconds)
                    aloneCPU.append(run.cpu / Double(items))
                } else {
                    let run = try await outboxFlush(items, server: server, token: token, concurrency: concurrency, folder: folder)
                    flush.append(run.seconds)
                    flushCPU.append(run.cpu / Double(items))
                }
            }
        }
        func spread(_ seconds: [Double]) -> String {
            let rates = seconds.map { Double(items) / $0 }.sorted()
            return String(format: "%.0f/s (%.0f–%.0f)", rates[rates.count / 2], rates.first!, rates.last!)
        }
        /// Throughput against raw's: the ratio of the medians, and of each round's pair.
        func ratio(to seconds: [Double]) -> String {
            let ratios = zip(raw, seconds).map { $0 / $1 }
            return String(
                format: "%.2f (per round %.2f–%.2f)", BenchCommand.median(raw) / BenchCommand.median(seconds), ratios.min()!, ratios.max()!)
        }
        print("  baseline: URLSession POSTs, \(concurrency) in flight: \(spread(raw))")
        print("  outbox flush via HTTPTransport:             \(spread(flush))")
        print("  ratio outbox / raw throughput: \(ratio(to: flush))")
        print(
            "  CPU per item, process (all threads, server included), µs: raw \(EnqueueBenchmark.spread(rawCPU)), outbox \(EnqueueBenchmark.spread(flushCPU))"
        )
        print(
            "  where the gap is: the same prebuilt POSTs through HTTPTransport alone (no outbox): \(spread(alone)), ratio to raw \(ratio(to: alone)), CPU per item \(EnqueueBenchmark.spread(aloneCPU)) µs"
        )
        return 0
    }

    /// Seconds for the requests, built up front, sent straight with URLSession.
    static func rawPosts(_ items: Int, server: SyncServer, token: String, concurrency: Int) async throws -> (seconds: Double, cpu: Double) {
        // Configured as HTTPTransport's session is: with URLSession's default cache, every
        // request also listed the cache's folder on disk (2 % of the run's CPU in `perf`), a
        // cost the baseline paid and the transport did not, which flattered the ratio.
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = concurrency
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        let session = URLSession(configuration: configuration)
        return try await timedPosts(items, server: server, token: token, side: "baseline") { requests in
            await send(requests, through: session, concurrency: concurrency)
        }
    }

    /// Seconds for the same requests as `rawPosts`, built up front, sent through
    /// `HTTPTransport` (its reply bound, deadline and cancellation shield) without the outbox:
    /// what the transport costs on its own, apart from what the outbox adds.
    static func transportPosts(
        _ items: Int, server: SyncServer, token: String, concurrency: Int
    ) async throws -> (seconds: Double, cpu: Double) {
        let transport = HTTPTransport(workspace: "bench", baseURL: server.baseURL, timeout: .seconds(20), maxConnections: concurrency) {
            token
        }
        return try await timedPosts(items, server: server, token: token, side: "transport") { requests in
            await send(requests, concurrency: concurrency) { (try? await transport.perform($0))?.status == 201 }
        }
    }

    /// Seconds and CPU for `post` to send `items` prebuilt orders (built before the clock
    /// starts); it returns how many were created, and fewer than `items` fails the run.
    static func timedPosts(
        _ items: Int, server: SyncServer, token: String, side: String, post: ([URLRequest]) async -> Int
    ) async throws -> (seconds: Double, cpu: Double) {
        let requests = try salesOrderRequests(items, server: server, token: token)
        let cpu = EnqueueBenchmark.processCPU()
        let start = DispatchTime.now().uptimeNanoseconds
        let created = await post(requests)
        let seconds = OutboxBenchmark.seconds(since: start)
        let used = EnqueueBenchmark.processCPU() - cpu
        guard created == items else { throw BenchmarkFailure(message: "\(side): only \(created) of \(items) created") }
        return (seconds, used)
    }

    /// Seconds for the outbox's flush through HTTPTransport (the enqueues are not timed).
    static func outboxFlush(
        _ items: Int, server: SyncServer, token: String, concurrency: Int, folder: URL
    ) async throws -> (seconds: Double, cpu: Double) {
        let transport = HTTPTransport(workspace: "bench", baseURL: server.baseURL, timeout: .seconds(20), maxConnections: concurrency) {
            token
        }
        let outbox = try Outbox(
            path: folder.appendingPathComponent("device.sqlite").path, forms: FormCatalog.forms,
            transport: transport, configuration: Outbox.Configuration(concurrency: concurrency))
        let before = server.documents().count
        for n in 0..<items { try await outbox.enqueue(OutboxBenchmark.order(customer: Int64(items + n + 1))) }
        let cpu = EnqueueBenchmark.processCPU()
        let start = DispatchTime.now().uptimeNanoseconds
        let report = await outbox.flush()
        let seconds = OutboxBenchmark.seconds(since: start)
        let used = EnqueueBenchmark.processCPU() - cpu
        guard report.sent == items, server.documents().count == before + items else {
            throw BenchmarkFailure(message: "outbox: \(report), server holds \(server.documents().count)")
        }
        return (seconds, used)
    }

    /// `count` ready-to-send `SalesOrder` creates with the headers the outbox sends. Their keys
    /// and document ids come from `identity`: by default the live environment's, as a device's
    /// do (time-ordered UUIDs); `bench server --identities random` passes version 4 UUIDs, as
    /// devices before 0.7.6 sent, each of which lands on a random page of the server's indexes.
    static func salesOrderRequests(
        _ count: Int, server: SyncServer, token: String, identity: () -> String = OutboxEnvironment.live.newID
    ) throws -> [URLRequest] {
        try (0..<count).map { n in
            let order = OutboxBenchmark.order(customer: Int64(n + 1))
            var request = URLRequest(url: server.baseURL.appendingPathComponent(order.endpoint))
            request.httpMethod = "POST"
            request.httpBody = try FormRegistry.encode(order)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue(identity(), forHTTPHeaderField: ProtocolHeader.idempotencyKey)
            request.setValue(identity(), forHTTPHeaderField: ProtocolHeader.document)
            request.setValue("bench", forHTTPHeaderField: ProtocolHeader.workspace)
            request.setValue("application/json, application/problem+json", forHTTPHeaderField: "Accept")
            request.setValue("SalesOrder; version=\(SalesOrder.formVersion)", forHTTPHeaderField: ProtocolHeader.form)
            return request
        }
    }

    /// Sends `requests` keeping `concurrency` in flight; how many were answered 201.
    static func send(_ requests: [URLRequest], through session: URLSession, concurrency: Int) async -> Int {
        await send(requests, concurrency: concurrency) { ((try? await session.data(for: $0))?.1 as? HTTPURLResponse)?.statusCode == 201 }
    }

    /// Sends `requests` with `post` keeping `concurrency` in flight; how many it says were created.
    static func send(_ requests: [URLRequest], concurrency: Int, post: @escaping @Sendable (URLRequest) async -> Bool) async -> Int {
        await withTaskGroup(of: Int.self) { group -> Int in
            var next = 0
            var ok = 0
            func add() {
                let request = requests[next]
                next += 1
                group.addTask { await post(request) ? 1 : 0 }
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
