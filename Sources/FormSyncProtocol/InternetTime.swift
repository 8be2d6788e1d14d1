import Foundation
import Synchronization

/// RFC 3339 times as the protocol writes and reads them (`2026-12-06T10:42:00Z`, in UTC, with
/// or without fractions of a second), through date formatters made once: making one costs
/// about 70 µs on Linux, and a submission's capture time was stamped by the device and read by
/// the server with new ones every time (a quarter of the outbox's CPU per item over HTTP).
/// A formatter is used by one thread at a time.
package enum InternetTime {
    private static let whole = Mutex(formatter([.withInternetDateTime]))
    private static let fractional = Mutex(formatter([.withInternetDateTime, .withFractionalSeconds]))

    private static func formatter(_ options: ISO8601DateFormatter.Options) -> ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = options
        return formatter
    }

    /// `date` in UTC, with milliseconds when `fractionalSeconds`.
    package static func string(_ date: Date, fractionalSeconds: Bool = false) -> String {
        fractionalSeconds ? fractional.withLock { $0.string(from: date) } : whole.withLock { $0.string(from: date) }
    }

    /// The time `text` names, read with or without fractions of a second; nil when it is not one.
    package static func date(_ text: String, fractionalSeconds: Bool) -> Date? {
        fractionalSeconds ? fractional.withLock { $0.date(from: text) } : whole.withLock { $0.date(from: text) }
    }
}
