import Foundation
import Testing

@testable import FormSyncProtocol

/// The shared formatters write and read what a formatter of the same options made for the call
/// does, from many threads at once.
struct InternetTimeTests {
    static func fresh(_ fractional: Bool) -> ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = fractional ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
        return formatter
    }

    @Test func timesAreWrittenAndReadAsAFormatterMadeForTheCallDoes() {
        for n in 0..<500 {
            let date = Date(timeIntervalSince1970: Double(n) * 86_399.123 + Double(n % 7) * 1_000_000)
            for fractional in [false, true] {
                let text = InternetTime.string(date, fractionalSeconds: fractional)
                #expect(text == Self.fresh(fractional).string(from: date))
                #expect(InternetTime.date(text, fractionalSeconds: fractional) == Self.fresh(fractional).date(from: text))
            }
        }
        for text in ["2026-12-06T10:42:00Z", "2026-12-06T10:42:00.5+01:00", "2026-02-30T00:00:00Z", "yesterday", ""] {
            for fractional in [false, true] {
                #expect(InternetTime.date(text, fractionalSeconds: fractional) == Self.fresh(fractional).date(from: text), "\(text)")
            }
        }
    }

    @Test func callersOnManyThreadsEachGetTheirOwnTime() async {
        let wrong = await withTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for n in 0..<300 {
                        let milliseconds = Int64(task) * 1_000_000_007 + Int64(n) * 1_234_567
                        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
                        let text = InternetTime.string(date, fractionalSeconds: true)
                        let back = InternetTime.date(text, fractionalSeconds: true)
                        if back.map({ Int64(($0.timeIntervalSince1970 * 1000).rounded()) }) != milliseconds { wrong += 1 }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0)
    }
}
