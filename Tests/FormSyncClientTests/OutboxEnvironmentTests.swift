import Foundation
import Testing

@testable import FormSyncClient

/// The live environment's identities: time-ordered version 7 UUIDs, lowercase, never repeated.
struct OutboxEnvironmentTests {
    static func bytes(_ id: String) -> [UInt8] {
        UUID(uuidString: id).map { withUnsafeBytes(of: $0.uuid) { Array($0) } } ?? []
    }

    @Test func liveIdentitiesAreLowercaseVersion7UUIDsCarryingTheClock() {
        var seen = Set<String>()
        let before = OutboxEnvironment.currentMilliseconds()
        for _ in 0..<2000 {
            let id = OutboxEnvironment.live.newID()
            #expect(id.count == 36)
            #expect(id == id.lowercased())
            #expect(UUID(uuidString: id)?.uuidString.lowercased() == id, "\(id) is written as Foundation writes a UUID")
            let bytes = Self.bytes(id)
            #expect(bytes.count == 16, "\(id) is a UUID")
            guard bytes.count == 16 else { continue }
            #expect(bytes[6] >> 4 == 7, "version 7: \(id)")
            #expect(bytes[8] >> 6 == 0b10, "RFC 9562 variant: \(id)")
            let milliseconds = bytes[0..<6].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            #expect(milliseconds >= before && milliseconds <= OutboxEnvironment.currentMilliseconds(), "the time it was made: \(id)")
            seen.insert(id)
        }
        #expect(seen.count == 2000)
    }

    @Test func identitiesMadeLaterSortAfterEarlierOnesAsText() {
        var previous = ""
        for milliseconds in stride(from: Int64(1_700_000_000_000), to: 1_700_000_100_000, by: 997) {
            let id = OutboxEnvironment.timeOrderedUUID(milliseconds: milliseconds)
            #expect(id > previous, "\(id) after \(previous)")
            previous = id
        }
    }

    @Test func aClockOutsideTheFieldsRangeIsClampedNotTrapped() {
        let early = Self.bytes(OutboxEnvironment.timeOrderedUUID(milliseconds: -5_000))
        #expect(early[0..<6].allSatisfy { $0 == 0 }, "before 1970: time zero")
        let late = Self.bytes(OutboxEnvironment.timeOrderedUUID(milliseconds: .max))
        #expect(late[0..<6].allSatisfy { $0 == 0xFF }, "past the year 10889: the largest time")
        #expect(early[6] >> 4 == 7 && late[6] >> 4 == 7 && late[8] >> 6 == 0b10)
    }

    @Test func identitiesInTheSameMillisecondDifferInEveryRandomBit() {
        // Each of the 74 random bits is set in some identity and clear in another.
        var ones = [Int](repeating: 0, count: 128)
        for _ in 0..<500 {
            let raw = Self.bytes(OutboxEnvironment.timeOrderedUUID(milliseconds: 1_764_547_200_000))
            for bit in 0..<128 where raw[bit / 8] >> (7 - bit % 8) & 1 == 1 { ones[bit] += 1 }
        }
        let fixed = Set(0..<48).union([48, 49, 50, 51, 64, 65])
        for bit in 0..<128 where !fixed.contains(bit) {
            #expect(ones[bit] > 0 && ones[bit] < 500, "bit \(bit) varies")
        }
    }
}
