import Synchronization

/// When this node last recorded each device's sighting, so that a device's last-seen time is
/// written at most once a minute per node instead of on every request. Bounded: when full it
/// starts over (a device is then written once more).
final class DeviceSightings: Sendable {
    /// How stale a recorded sighting may get: a minute.
    static let interval: Int64 = 60_000
    /// Devices remembered at most.
    static let capacity = 10_000

    private let recorded = Mutex<[String: Int64]>([:])

    /// Whether `device`'s sighting should be written now.
    func isDue(_ device: String, now: Int64) -> Bool {
        recorded.withLock { recorded in
            guard let last = recorded[device] else { return true }
            let (gap, overflow) = now.subtractingReportingOverflow(last)
            return overflow || gap < 0 || gap >= Self.interval
        }
    }

    func record(_ device: String, now: Int64) {
        recorded.withLock { recorded in
            if recorded.count >= Self.capacity { recorded.removeAll(keepingCapacity: true) }
            recorded[device] = now
        }
    }
}
