import Foundation

extension Int64 {
    /// `self + other`, pinned to `Int64.min`/`Int64.max` instead of trapping: due times and
    /// leases are sums of a clock and a delay, and neither is trusted.
    package func addingClamped(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }
}

extension Int64 {
    /// `self - other`, pinned instead of trapping.
    package func subtractingClamped(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other > 0 ? .min : .max
    }
}

extension Duration {
    /// Whole milliseconds, pinned to `Int64`'s range instead of trapping (a negative span is 0
    /// where a caller clamps it).
    package var clampedMilliseconds: Int64 {
        let (whole, overflow) = components.seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return components.seconds > 0 ? .max : .min }
        return whole.addingClamped(components.attoseconds / 1_000_000_000_000_000)
    }
}

extension Date {
    /// The instant `milliseconds` after 1970: what the outbox stores times as.
    package init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// Whole milliseconds since 1970, pinned to `Int64`'s range instead of trapping.
    package var millisecondsSince1970: Int64 {
        let value = (timeIntervalSince1970 * 1000).rounded(.down)
        guard value.isFinite else { return value > 0 ? .max : .min }
        return value >= 9.2e18 ? .max : value <= -9.2e18 ? .min : Int64(value)
    }
}
