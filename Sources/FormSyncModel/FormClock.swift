import Foundation

/// The day and the moment a spec's `today()` and `now()` read while a payload is validated.
/// On a device it is the device's own clock and calendar day; a server sets `unknown` (it
/// cannot know the device's day, so a constraint that reads the clock is the device's to
/// check); tests fix it.
public struct FormClock: Sendable {
    let read: @Sendable () -> (today: LocalDate, now: Timestamp)?

    /// A clock that reads `read` each time it is asked.
    public init(_ read: @escaping @Sendable () -> (today: LocalDate, now: Timestamp)?) {
        self.read = read
    }

    /// The system clock, the day in the device's time zone.
    public static let system = FormClock {
        let date = Date()
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone.current
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        guard let year = parts.year, let month = parts.month, let day = parts.day,
            let today = LocalDate(year: year, month: month, day: day)
        else { return nil }
        return (today, Timestamp(date))
    }

    /// No clock: `today()` and `now()` are unknown.
    public static let unknown = FormClock { nil }

    /// A clock stopped at `today` and `now`.
    public static func fixed(today: LocalDate, now: Timestamp) -> FormClock {
        FormClock { (today, now) }
    }

    /// The clock validation reads; set it for a task with `FormClock.$current.withValue(_:)`.
    @TaskLocal public static var current = FormClock.system

    /// `today()`.
    public var today: LocalDate? { read()?.today }
    /// `now()`.
    public var now: Timestamp? { read()?.now }
}
