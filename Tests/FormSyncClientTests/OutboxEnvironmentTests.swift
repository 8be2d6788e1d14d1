import Foundation
import Testing

@testable import FormSyncClient

/// The live environment's identities: random version 4 UUIDs, lowercase, never repeated.
struct OutboxEnvironmentTests {
    @Test func liveIdentitiesAreLowercaseVersion4UUIDs() {
        var seen = Set<String>()
        for _ in 0..<2000 {
            let id = OutboxEnvironment.live.newID()
            #expect(id.count == 36)
            #expect(id == id.lowercased())
            let parsed = UUID(uuidString: id)
            #expect(parsed != nil, "\(id) is a UUID")
            let bytes = parsed.map { withUnsafeBytes(of: $0.uuid) { Array($0) } } ?? []
            #expect(bytes.count == 16 && bytes[6] >> 4 == 4, "version 4: \(id)")
            #expect(bytes.count == 16 && bytes[8] >> 6 == 0b10, "RFC 4122 variant: \(id)")
            seen.insert(id)
        }
        #expect(seen.count == 2000)
    }

    @Test func liveIdentitiesUseEveryRandomBit() {
        // Each of the 122 random bits is set in some identity and clear in another.
        var ones = [Int](repeating: 0, count: 128)
        for _ in 0..<500 {
            let uuid = UUID(uuidString: OutboxEnvironment.live.newID())!.uuid
            withUnsafeBytes(of: uuid) { raw in
                for bit in 0..<128 where raw[bit / 8] >> (7 - bit % 8) & 1 == 1 { ones[bit] += 1 }
            }
        }
        let fixed: Set<Int> = [48, 49, 50, 51, 64, 65]
        for bit in 0..<128 where !fixed.contains(bit) {
            #expect(ones[bit] > 0 && ones[bit] < 500, "bit \(bit) varies")
        }
    }
}
