import Foundation
import Synchronization
import Testing

@_spi(Generated) @testable import FormSyncModel

struct ModelTypeTests {
    func roundTrip<T: Codable>(_ value: T) throws -> (T, String) {
        let data = try JSONEncoder().encode(value)
        return (try JSONDecoder().decode(T.self, from: data), String(decoding: data, as: UTF8.self))
    }

    @Test func moneyKeepsIntegerMinorUnitsExactBeyondDoublePrecision() throws {
        // 2^53 + 1 cannot be represented as a Double; it must survive the JSON round trip.
        let json = #"{"minor_units":9007199254740993,"currency":"EUR"}"#
        let money = try JSONDecoder().decode(Money.self, from: Data(json.utf8))
        #expect(money.minorUnits == 9_007_199_254_740_993)
        let (back, text) = try roundTrip(money)
        #expect(back == money)
        #expect(text.contains("9007199254740993"))
    }

    @Test func moneyWithAFractionalAmountIsRefusedNotRounded() {
        let json = #"{"minor_units":12.5,"currency":"EUR"}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Money.self, from: Data(json.utf8)) }
    }

    @Test func timestampsParseOffsetsAndRoundTripToUTCMilliseconds() throws {
        let t = try #require(Timestamp("2026-11-30T10:26:57.125+02:00"))
        #expect(t.description == "2026-11-30T08:26:57.125Z")
        #expect(Timestamp("2026-11-30T08:26:57Z")?.millisecondsSince1970 == 1_796_027_217_000)
        #expect(Timestamp("1969-12-31T23:59:59.999Z")?.millisecondsSince1970 == -1)
        #expect(Timestamp("1969-12-31T23:59:59.999Z")?.description == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp("2026-11-30T08:26:57.1234567Z")?.millisecondsSince1970 == 1_796_027_217_123)
        #expect(Timestamp("2026-11-30T08:26:57") == nil)
        #expect(Timestamp("2026-02-30T08:26:57Z") == nil)
        let (back, text) = try roundTrip(t)
        #expect(back == t)
        #expect(text == #""2026-11-30T08:26:57.125Z""#)
    }

    @Test func timestampAgreesWithFoundationsISO8601Formatter() throws {
        let formatter = ISO8601DateFormatter()
        for seconds in stride(from: -2_000_000_000, through: 4_000_000_000, by: 123_456_789) {
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            let text = formatter.string(from: date)
            #expect(Timestamp(text)?.millisecondsSince1970 == Int64(seconds) * 1000)
            #expect(Timestamp(date).description == text)
        }
    }

    @Test func datesAndTimesRejectValuesThatDoNotExist() throws {
        #expect(LocalDate("2024-02-29") != nil)
        #expect(LocalDate("2023-02-29") == nil)
        #expect(LocalDate("2023-13-01") == nil)
        #expect(LocalDate("23-01-01") == nil)
        #expect(LocalTime("23:59")?.description == "23:59")
        #expect(LocalTime("07:05:09")?.description == "07:05:09")
        #expect(LocalTime("24:00") == nil)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(LocalDate.self, from: Data(#""2023-02-29""#.utf8)) }
    }

    @Test func entityRefsEncodeAsBareNumbersAndFileRefsAsObjects() throws {
        #expect(try roundTrip(EntityRef(-42)).1 == "-42")
        let file = FileRef(id: -7, byteCount: 10, contentType: "image/jpeg")
        let (back, _) = try roundTrip(file)
        #expect(back == file)
        #expect(file.remapped([-7: 99]).id == 99)
        #expect(file.remapped([-8: 99]).id == -7)
        #expect(FileRef(id: 7).remapped([7: 99]).id == 7)
        #expect(EntityRef(7).remapped([7: 99]) == EntityRef(7))
    }

    @Test func placeholderIDsAreNegativeUniqueJSONSafeAndSurviveARestart() {
        let clock = 1_796_027_217_000 as Int64
        let source = PlaceholderIDSource(milliseconds: { clock })
        let ids = (0..<5000).map { _ in source.next() }
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0 < 0 && -$0 <= PlaceholderIDSource.maxMagnitude })
        // A burst of 5000 in one millisecond runs ahead of the clock; a restarted source that is
        // told the largest id in use does not repeat any of them.
        let restarted = PlaceholderIDSource(milliseconds: { clock + 1 }, issuedBefore: -ids.min()!)
        let next = restarted.next()
        #expect(!ids.contains(next))
        #expect(next < ids.min()!)
    }

    @Test func placeholderIDsNeverGoBackwardsWhenTheClockDoes() {
        let now = Mutex(2_000_000_000_000 as Int64)
        let source = PlaceholderIDSource(milliseconds: { now.withLock { $0 } })
        let first = source.next()
        now.withLock { $0 -= 60_000 }
        let second = source.next()
        #expect(second < first)
    }

    @Test(arguments: [Int64.max, Int64.min, -1, 9_007_199_254_740_991])
    func anAbsurdClockNeverTrapsTheIDSourceNorLeavesTheJSONSafeRange(_ reading: Int64) {
        let source = PlaceholderIDSource(milliseconds: { reading })
        let ids = (0..<3).map { _ in source.next() }
        #expect(Set(ids).count == 3)
        #expect(ids.allSatisfy { $0 < 0 && -$0 <= PlaceholderIDSource.maxMagnitude })
    }

    @Test func pathSegmentsArePercentEncodedSoValuesCannotChangeTheResource() {
        #expect(PathSegment.encode("LIS-0042") == "LIS-0042")
        #expect(PathSegment.encode("a/b?c#d e") == "a%2Fb%3Fc%23d%20e")
        #expect(PathSegment.encode("ç") == "%C3%A7")
        #expect(PathSegment.encode(nil) == "")
    }

    @Test func jsonPointersEscapeAndSplitTokens() {
        #expect(JSONPointer.appending(JSONPointer.appending("#", "a/b~c"), 3) == "#/a~1b~0c/3")
        #expect(JSONPointer.tokens("#/a~1b~0c/3") == ["a/b~c", "3"])
        #expect(JSONPointer.tokens("#") == [])
        #expect(JSONPointer.tokens("/a") == nil)
    }
}

struct PathSegmentDotTests {
    @Test func dotSegmentsAreEncodedSoAURLStackCannotRemoveThem() {
        #expect(PathSegment.encode(".") == "%2E")
        #expect(PathSegment.encode("..") == "%2E%2E")
        #expect(PathSegment.encode("...") == "...")
        #expect(PathSegment.encode("a.b") == "a.b")
    }
}
