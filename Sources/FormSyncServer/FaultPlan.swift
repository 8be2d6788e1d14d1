import FormSyncProtocol
import Foundation
import Synchronization

/// Faults the reference server injects into its next requests, for tests and the demo: a
/// scripted flaky network on loopback.
public final class FaultPlan: Sendable {
    /// One kind of fault.
    public enum Fault: Sendable, Equatable {
        /// Process and commit the request, then lose the reply (cut off after its head, and the
        /// connection closed): the client never learns the outcome.
        case dropAfterCommit
        /// Hold the request this long (after marking its key in flight; an append before it is
        /// read), then process it.
        case delay(milliseconds: Int)
        /// Hold the request (after marking its key in flight; an append before it is read) until
        /// `releaseHeld()`: a test orders events by it (`waitUntilHolding`) instead of by a guess
        /// of time.
        case hold
        /// 503 with `Retry-After`, before processing.
        case unavailable(retryAfterSeconds: Int)
        /// 429 with `Retry-After`, before processing.
        case tooManyRequests(retryAfterSeconds: Int)
        /// A captive portal: 200 with an HTML login page, for every route including /health.
        case captivePortal
        /// 401, as if the token had expired.
        case unauthorized
    }

    /// Which requests a fault applies to: submissions, file uploads (`POST /files` and the
    /// creation of resumable uploads), the appends of resumable uploads, or all of them. A
    /// captive portal also answers every other route (health, token refresh) while it lasts.
    public enum Target: String, Sendable {
        case submissions, files, appends, all
    }

    /// The kind of route a request is on.
    enum Route {
        case submission, file, append, other

        /// The class of faults a request meets, by the route it takes (`method` for none).
        init(_ route: FormSyncProtocol.Route?, method: String) {
            switch route {
            case .fileUpload, .uploadCreate: self = .file
            case .uploadAppend: self = .append
            case .submission: self = .submission
            case .some: self = .other
            case nil: self = method == "PATCH" ? .append : method == "GET" || method == "HEAD" ? .other : .submission
            }
        }
    }

    private struct Entry {
        var fault: Fault
        var remaining: Int
        var target: Target
    }

    private let entries = Mutex<[Entry]>([])
    /// Requests a delay or hold fault is holding now, and the releases granted to held ones.
    private let held = NSCondition()
    nonisolated(unsafe) private var holdingCount = 0
    nonisolated(unsafe) private var releases = 0
    private let outageWindow = Mutex<(start: Date, end: Date)?>(nil)
    private let bytesPerSecond = Atomic<Int>(0)

    /// Limits what the server reads from all its connections together to `bytesPerSecond`
    /// (a slow uplink, such as 20 KB/s on 2G); 0 lifts the limit. Replies are not limited.
    public func limitBandwidth(bytesPerSecond: Int) {
        self.bytesPerSecond.store(max(0, min(bytesPerSecond, 1 << 40)), ordering: .relaxed)
    }

    /// The bandwidth limit in bytes per second (0: none).
    public var bandwidth: Int { bytesPerSecond.load(ordering: .relaxed) }

    /// No server answers for `seconds`, starting `delay` seconds from now: every request, health
    /// checks included, has its connection closed before it is read into the protocol (nothing
    /// is processed). Each is bounded to a day.
    public func outage(seconds: TimeInterval, after delay: TimeInterval = 0) {
        let start = Date().addingTimeInterval(max(0, min(delay, 86_400)))
        outageWindow.withLock { $0 = (start, start.addingTimeInterval(max(0, min(seconds, 86_400)))) }
    }

    /// Whether an outage is in progress.
    public var isOutage: Bool {
        let now = Date()
        return outageWindow.withLock { window in window.map { $0.start <= now && now < $0.end } ?? false }
    }

    /// `outage=SECONDS[@AFTER]` (`formsync serve --fault`): an outage of SECONDS, starting AFTER
    /// seconds from now (at once when absent), each 1 to 86,400 (AFTER from 0); nil otherwise.
    public static func parseOutage(_ text: String) -> (seconds: Int, after: Int)? {
        guard text.hasPrefix("outage=") else { return nil }
        let parts = text.dropFirst("outage=".count).split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard let seconds = Int(parts[0]), (1...86_400).contains(seconds) else { return nil }
        guard parts.count == 2 else { return (seconds, 0) }
        guard let after = Int(parts[1]), (0...86_400).contains(after) else { return nil }
        return (seconds, after)
    }

    public init() {}

    /// Runs `body` (a delay, a wait for release) counted as a request being held.
    func holding(_ body: () -> Void) {
        held.lock()
        holdingCount += 1
        held.broadcast()
        held.unlock()
        body()
        held.lock()
        holdingCount -= 1
        held.broadcast()
        held.unlock()
    }

    /// Blocks a `.hold` request until a test releases it.
    func waitForRelease() {
        held.lock()
        while releases == 0 { held.wait() }
        releases -= 1
        held.unlock()
    }

    /// Waits until `count` requests are being held (by `.delay` or `.hold`); false after `seconds`.
    public func waitUntilHolding(_ count: Int = 1, seconds: TimeInterval = 30) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        held.lock()
        defer { held.unlock() }
        while holdingCount < count {
            if !held.wait(until: deadline) { return holdingCount >= count }
        }
        return true
    }

    /// Lets `count` requests held by `.hold` go on.
    public func releaseHeld(_ count: Int = 1) {
        held.lock()
        releases += count
        held.broadcast()
        held.unlock()
    }

    /// Applies `fault` to the next `count` requests that `target` matches, after the faults
    /// already planned for them.
    public func add(_ fault: Fault, count: Int = 1, target: Target = .all) {
        entries.withLock { $0.append(Entry(fault: fault, remaining: count, target: target)) }
    }

    /// Forgets every planned fault.
    public func clear() {
        entries.withLock { $0 = [] }
    }

    /// Whether no fault is planned.
    public var isEmpty: Bool { entries.withLock { $0.isEmpty } }

    /// Takes the fault for a request on `route`, if any is planned.
    func next(for route: Route) -> Fault? {
        entries.withLock { entries in
            let index = entries.firstIndex { entry in
                switch route {
                case .submission: return entry.target == .submissions || entry.target == .all
                case .file: return entry.target == .files || entry.target == .all
                case .append: return entry.target == .appends || entry.target == .all
                case .other: return entry.fault == .captivePortal
                }
            }
            guard let index else { return nil }
            let fault = entries[index].fault
            entries[index].remaining -= 1
            if entries[index].remaining <= 0 { entries.remove(at: index) }
            return fault
        }
    }

    /// Parses `KIND[:COUNT]` as the command line takes it: `drop`, `delay=MS`, `503=SECONDS`,
    /// `429=SECONDS`, `captive`, `401`; for example `503=2:3` is three 503s with Retry-After 2.
    public static func parse(_ text: String) -> (Fault, Int)? {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        let count = parts.count == 2 ? Int(parts[1]) : 1
        guard let count, count > 0 else { return nil }
        let kind = parts[0].split(separator: "=", maxSplits: 1).map(String.init)
        let value = kind.count == 2 ? Int(kind[1]) : nil
        switch kind[0] {
        case "drop": return (.dropAfterCommit, count)
        case "delay": return value.map { (.delay(milliseconds: $0), count) }
        case "503": return (.unavailable(retryAfterSeconds: value ?? 1), count)
        case "429": return (.tooManyRequests(retryAfterSeconds: value ?? 1), count)
        case "captive": return (.captivePortal, count)
        case "401": return (.unauthorized, count)
        default: return nil
        }
    }
}
