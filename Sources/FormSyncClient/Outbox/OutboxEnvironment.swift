import FormSyncModel
import Foundation
import Synchronization

/// The outside world the outbox reads: the clock, randomness and fresh identities. Injected so
/// that every test is deterministic.
public struct OutboxEnvironment: Sendable {
    /// Wall-clock milliseconds since 1970.
    public var now: @Sendable () -> Int64
    /// A uniform random number in [0, 1), for backoff jitter.
    public var random: @Sendable () -> Double
    /// A new unique identity (document and attempt identities).
    public var newID: @Sendable () -> String
    /// The fsync of the outbox's write-ahead log (`fdatasync`): tests of a power cut take the
    /// disk's durable state here.
    package var syncLog: @Sendable (Int32) -> Int32 = OutboxDatabase.defaultLogSync

    public init(now: @escaping @Sendable () -> Int64, random: @escaping @Sendable () -> Double, newID: @escaping @Sendable () -> String) {
        self.now = now
        self.random = random
        self.newID = newID
    }

    /// The real clock, the system random source and time-ordered UUIDs (`timeOrderedUUID`).
    public static let live = OutboxEnvironment(
        now: { currentMilliseconds() },
        random: { Double.random(in: 0..<1) },
        newID: { timeOrderedUUID(milliseconds: currentMilliseconds()) })

    static func currentMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// A version 7 UUID (RFC 9562), lowercase: `milliseconds` since 1970 in its first 48 bits,
    /// then 74 bits from the system's random source. Identities made close in time sort next to
    /// each other, so each new one lands on the last page of every index keyed by it (the
    /// outbox's once-means-once record and lanes, the server's ledger and documents) instead of
    /// a random page that then splits. A clock before 1970 or past the year 10889 is clamped; a
    /// clock that jumps back costs that order, never uniqueness, which rests on the random bits.
    /// (Foundation's `UUID()` on Linux opens and reads `/dev/urandom` for each one.)
    static func timeOrderedUUID(milliseconds: Int64) -> String {
        var generator = SystemRandomNumberGenerator()
        let time = UInt64(clamping: min(max(milliseconds, 0), (1 << 48) - 1))
        // Version 7 in the high nibble of byte 6, the RFC 9562 variant in the top bits of byte 8.
        let high = time << 16 | 0x7000 | (generator.next() as UInt64) & 0x0FFF
        let low = (generator.next() as UInt64) & ~(0xC000 << 48) | 0x8000 << 48
        // Written digit by digit: through `UUID.uuidString` (formatted upper case, then
        // `lowercased()`) an identity took 1.2 µs, written here 0.64 µs (two per enqueue).
        return String(unsafeUninitializedCapacity: 36) { out in
            var at = 0
            for position in 0..<32 {
                if position == 8 || position == 12 || position == 16 || position == 20 {
                    out[at] = UInt8(ascii: "-")
                    at += 1
                }
                let word = position < 16 ? high : low
                let digit = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * (position % 16))) & 0xF
                out[at] = digit < 10 ? digit + UInt8(ascii: "0") : digit - 10 + UInt8(ascii: "a")
                at += 1
            }
            return at
        }
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
        let number = counter.withLock { value in
            value += 1
            return value
        }
        return "\(prefix)-\(number)"
    }
}
