import Foundation
import Synchronization
import FormSyncModel

/// The outside world the outbox reads: the clock, randomness and fresh identities. Injected so
/// that every test is deterministic.
public struct OutboxEnvironment: Sendable {
    /// Wall-clock milliseconds since 1970.
    public var now: @Sendable () -> Int64
    /// A uniform random number in [0, 1), for backoff jitter.
    public var random: @Sendable () -> Double
    /// A new unique identity (document and attempt identities).
    public var newID: @Sendable () -> String

    public init(now: @escaping @Sendable () -> Int64, random: @escaping @Sendable () -> Double, newID: @escaping @Sendable () -> String) {
        self.now = now
        self.random = random
        self.newID = newID
    }

    /// The real clock, the system random source and random UUIDs.
    public static let live = OutboxEnvironment(
        now: { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) },
        random: { Double.random(in: 0..<1) },
        newID: { randomUUID() })

    /// A version 4 UUID, lowercase, from the system's random source. (Foundation's `UUID()` on
    /// Linux opens and reads `/dev/urandom` for each one: two of those per enqueue were 3 % of
    /// its time.)
    static func randomUUID() -> String {
        var generator = SystemRandomNumberGenerator()
        // Version 4 in the high nibble of byte 6, the RFC 4122 variant in the top bits of byte 8.
        var words = (((generator.next() as UInt64) & ~0xF000 | 0x4000).bigEndian, ((generator.next() as UInt64) & ~(0xC000 << 48) | 0x8000 << 48).bigEndian)
        return withUnsafeBytes(of: &words) { UUID(uuid: $0.load(as: uuid_t.self)) }.uuidString.lowercased()
    }
}

/// A clock a test moves by hand.
public final class ManualClock: Sendable {
    private let value: Mutex<Int64>

    public init(_ milliseconds: Int64) {
        value = Mutex(milliseconds)
    }

    /// The current time in milliseconds since 1970.
    public var now: Int64 { value.withLock { $0 } }

    /// Moves time forward, as a test waiting out a backoff would.
    public func advance(by milliseconds: Int64) {
        value.withLock { $0 += milliseconds }
    }
}

/// Identities `prefix-1`, `prefix-2`, … for tests that assert on them.
public final class SequentialIDs: Sendable {
    private let counter = Mutex(0)
    private let prefix: String

    public init(prefix: String = "id") {
        self.prefix = prefix
    }

    /// The next identity.
    public func next() -> String {
        "\(prefix)-\(counter.withLock { $0 += 1; return $0 })"
    }
}
