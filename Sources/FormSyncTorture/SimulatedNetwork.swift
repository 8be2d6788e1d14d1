import FormSyncHTTP
import FormSyncProtocol
import FormSyncServer
import FormSyncTesting
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The seeded simulation's network: every request of the device's real `HTTPTransport` comes
/// here and goes to the reference server's real handler in-process, unless the schedule takes
/// the network away or the request's fault says otherwise. A request's fault is drawn from the
/// seed and the request itself (method, path, idempotency key, offset, and how often it was
/// seen), not from the order requests arrive in, so a seed replays the same faults.
final class SimulatedNetwork: Sendable {
    private struct State {
        var outage = false
        var calm = false
        var seen: [String: Int] = [:]
        var requests = 0
        var faults: [String: Int] = [:]
        /// Submissions the server accepted (counted only when sabotaging).
        var accepted = 0
    }

    private let seed: UInt64
    private let server: SyncServer
    private let state = Mutex(State())
    private let trace: SimulationTrace
    /// A broken network that delivers some submissions twice under a new document identity,
    /// so a test can see that the invariants catch it.
    private let sabotage: Bool

    init(seed: UInt64, server: SyncServer, trace: SimulationTrace, sabotage: Bool = false) {
        self.seed = seed
        self.server = server
        self.trace = trace
        self.sabotage = sabotage
    }

    /// No server answers while it is down (nothing is processed).
    func setOutage(_ down: Bool) { state.withLock { $0.outage = down } }
    /// No more faults (the drain at the end of a schedule).
    func calm() { state.withLock { $0.calm = true } }
    var faultCounts: [String: Int] { state.withLock { $0.faults } }
    var requestCount: Int { state.withLock { $0.requests } }

    private static let retryAfters = ["1", "2", "120", "999999999999", "-3", "Wed, 21 Oct 2015 07:28:00 GMT", "soon", "0"]

    func exchange(_ http: URLRequest, file: URL?) async throws -> (status: Int, headers: [String: String], body: Data) {
        let method = http.httpMethod ?? "GET"
        guard let url = http.url, let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { throw URLError(.badURL) }
        let path = components.percentEncodedPath
        var headers: [String: String] = [:]
        for (name, value) in http.allHTTPHeaderFields ?? [:] { headers[name.lowercased()] = value }
        let body = try file.map { try Data(contentsOf: $0) } ?? http.httpBody ?? Data()
        headers["content-length"] = String(body.count)
        let key =
            "\(method) \(path) \(headers[ProtocolHeader.idempotencyKey.lowercased()] ?? "") \(headers[ProtocolHeader.uploadOffset.lowercased()] ?? "") \(components.percentEncodedQuery ?? "")"
        let (occurrence, outage, calm) = state.withLock { state -> (Int, Bool, Bool) in
            state.requests += 1
            state.seen[key, default: 0] += 1
            return (state.seen[key]!, state.outage, state.calm)
        }
        var random = SplitMix64(state: seed ^ Self.hashValue(key) ^ UInt64(occurrence) &* 0x9E37_79B9_7F4A_7C15)
        // Completions across lanes come back in a seeded order.
        for _ in 0..<(random.next() % 4) { await Task.yield() }
        let write = method != "GET" && method != "HEAD" && path != "/auth/refresh" && path != "/health"
        func fault(_ name: String) {
            state.withLock { $0.faults[name, default: 0] += 1 }
            trace.add("net: \(name) on \(method) \(path)")
        }
        if outage {
            fault("outage")
            throw URLError(.notConnectedToInternet)
        }
        if !calm {
            let roll = random.next() % 1000
            let retryAfter = Self.retryAfters[Int(random.next() % UInt64(Self.retryAfters.count))]
            switch roll {
            case 0..<40:
                fault("request dropped")
                throw URLError(.timedOut)
            case 40..<60:
                fault("captive portal")
                return (200, ["content-type": "text/html"], Data("<html><body>Sign in to the Wi-Fi</body></html>".utf8))
            case 60..<75:
                fault("redirect")
                return (302, ["location": "http://portal.example/login"], Data())
            case 75..<95:
                fault("503 Retry-After: \(retryAfter)")
                return (503, ["retry-after": retryAfter], Data())
            case 95..<110:
                fault("429 Retry-After: \(retryAfter)")
                return (
                    429, ["retry-after": retryAfter, "content-type": "application/problem+json"],
                    Data(#"{"status":429,"title":"Too Many Requests"}"#.utf8)
                )
            case 110..<118
            where write && path != "/files" && !path.hasPrefix("/uploads") && !server.holds(headers[ProtocolHeader.document.lowercased()]):
                // (Only before the server holds the document: a real server replays its reply.)
                fault("422")
                return (
                    422, ["content-type": "application/problem+json"],
                    HTTPResponse.problem(.invalidPayload, detail: "refused by the simulation", errors: []).body
                )
            case 118..<126 where write && occurrence == 1:
                fault("409 key in flight")
                return (
                    409, ["content-type": "application/problem+json", "retry-after": "1"],
                    HTTPResponse.problem(.keyInFlight).body
                )
            default:
                break
            }
        }
        let request = HTTPRequest(method: method, path: path, query: components.percentEncodedQuery, headers: headers, body: body)
        guard let response = server.handle(request) else {
            fault("connection closed by the server")
            throw URLError(.networkConnectionLost)
        }
        // The first submission the server accepts arrives twice, and every fourth after it:
        // counted, not drawn, so that however the engine's passes and the schedule interleave
        // on a busy machine, the double delivery happens.
        if sabotage && write && response.status < 300 && headers[ProtocolHeader.form.lowercased()] != nil
            && state.withLock({ state -> Bool in
                state.accepted += 1
                return state.accepted % 4 == 1
            })
        {
            var twin = request
            twin.headers[ProtocolHeader.idempotencyKey.lowercased()] = (headers[ProtocolHeader.idempotencyKey.lowercased()] ?? "") + "-twin"
            twin.headers[ProtocolHeader.document.lowercased()] = (headers[ProtocolHeader.document.lowercased()] ?? "") + "-twin"
            _ = server.handle(twin)
        }
        if !calm && write && random.next() % 1000 < 50 {
            fault("reply lost after commit")
            throw URLError(.timedOut)
        }
        var replyHeaders: [String: String] = [:]
        for (name, value) in response.headers { replyHeaders[name.lowercased()] = value }
        return (response.status, replyHeaders, response.body)
    }

    static func hashValue(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}

/// What happened during one schedule, in order, for the report of a failing seed.
final class SimulationTrace: Sendable {
    private let events = Mutex<[String]>([])
    func add(_ event: String) { events.withLock { $0.append(event) } }
    var all: [String] { events.withLock { $0 } }
}

extension SyncServer {
    func holds(_ documentID: String?) -> Bool { documentID.map { document($0) != nil } ?? false }
}
