import Foundation

/// An instant, exact to the millisecond, written as ISO 8601 in UTC (`2026-11-30T08:26:57.125Z`).
/// Stored as integer milliseconds so that a JSON round trip gives back the same value, whatever
/// date strategy an encoder was configured with.
public struct Timestamp: Codable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var millisecondsSince1970: Int64

    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    public init(_ date: Date) {
        millisecondsSince1970 = Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// The instant as a Foundation `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000) }

    /// Parses ISO 8601 with a `Z` or `±HH:MM` offset and optional fractional seconds (to ms).
    public init?(_ text: String) {
        let chars = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= chars.count else { return nil }
            var value = 0
            for c in chars[from..<(from + count)] {
                guard c >= 48 && c <= 57 else { return nil }
                value = value * 10 + Int(c - 48)
            }
            return value
        }
        guard chars.count >= 20, chars[4] == 45, chars[7] == 45, chars[10] == 84 || chars[10] == 116,
            chars[13] == 58, chars[16] == 58,
            let date = LocalDate(year: number(0, 4) ?? -1, month: number(5, 2) ?? -1, day: number(8, 2) ?? -1),
            let time = LocalTime(hour: number(11, 2) ?? -1, minute: number(14, 2) ?? -1, second: number(17, 2) ?? -1)
        else { return nil }
        var index = 19
        var millis = 0
        if chars[index] == 46 {
            index += 1
            var digits = 0
            while index < chars.count, chars[index] >= 48, chars[index] <= 57 {
                if digits < 3 { millis = millis * 10 + Int(chars[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 { for _ in digits..<3 { millis *= 10 } }
        }
        guard index < chars.count else { return nil }
        var offsetMinutes = 0
        if chars[index] == 90 || chars[index] == 122 {
            guard index + 1 == chars.count else { return nil }
        } else if chars[index] == 43 || chars[index] == 45, index + 6 == chars.count, chars[index + 3] == 58,
            let h = number(index + 1, 2), let m = number(index + 4, 2), h < 24, m < 60
        {
            offsetMinutes = (h * 60 + m) * (chars[index] == 45 ? -1 : 1)
        } else {
            return nil
        }
        let days = Self.daysSince1970(date)
        let seconds = Int64(days) * 86_400 + Int64(time.hour * 3600 + time.minute * 60 + time.second) - Int64(offsetMinutes * 60)
        millisecondsSince1970 = seconds * 1000 + Int64(millis)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Timestamp(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text)' is not an ISO 8601 date-time with a time zone")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public var description: String {
        let millis = Int(((millisecondsSince1970 % 1000) + 1000) % 1000)
        let totalSeconds = (millisecondsSince1970 - Int64(millis)) / 1000
        let days = Int((totalSeconds - ((totalSeconds % 86_400) + 86_400) % 86_400) / 86_400)
        let secondOfDay = Int(totalSeconds - Int64(days) * 86_400)
        let (y, m, d) = Self.civil(fromDays: days)
        let base =
            "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
        return millis == 0 ? base + "Z" : base + "." + pad(millis, 3) + "Z"
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        a.millisecondsSince1970 < b.millisecondsSince1970
    }

    /// Days from 1970-01-01 (Howard Hinnant's algorithm).
    static func daysSince1970(_ date: LocalDate) -> Int {
        let y = date.month <= 2 ? date.year - 1 : date.year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (date.month + 9) % 12
        let doy = (153 * mp + 2) / 5 + date.day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
