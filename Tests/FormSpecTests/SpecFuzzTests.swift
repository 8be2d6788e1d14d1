import FormSyncTesting
import Foundation
import Testing

@testable import FormSpec

/// Seeded mutations of the example specs: the checker never crashes, never accepts a spec while
/// reporting an error, and always points inside the file.
struct SpecFuzzTests {
    struct Random: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let fragments = [
        "yes", "010", "&a", "*a", "<<: {}", "- ", "{", "}", "[", "\t", ":", "type: list", "required: true",
        "class", "\"", "'", "---", "fields:", "options: [a, a]", "min: -1", "é", "\u{0}", "to: x", "{x}",
        String(repeating: "[", count: 200), String(repeating: "{a: ", count: 100), "pattern: \"(a+)+\"",
        "endpoint: /a/../b", "max: 99999999999999999999", "type: list\n    fields:\n      x: { type: list, fields: { y: text } }",
    ]

    func mutate(_ text: String, _ random: inout Random) -> String {
        var lines = text.components(separatedBy: "\n")
        for _ in 0..<(1 + Int(random.next() % 3)) {
            let index = Int(random.next() % UInt64(max(lines.count, 1)))
            switch random.next() % 5 {
            case 0: lines.remove(at: index)
            case 1: lines.insert(lines[index], at: index)
            case 2: lines[index] += " " + Self.fragments[Int(random.next() % UInt64(Self.fragments.count))]
            case 3:
                var chars = Array(lines[index])
                if !chars.isEmpty { chars.remove(at: Int(random.next() % UInt64(chars.count))) }
                lines[index] = String(chars)
            default: lines.swapAt(index, Int(random.next() % UInt64(lines.count)))
            }
            if lines.isEmpty { lines = [""] }
        }
        return lines.joined(separator: "\n")
    }

    @Test func mutatedSpecsNeverCrashTheCheckerAndEveryDiagnosticPointsIntoTheFile() async throws {
        try await OffThePool.compute {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let specs = try SpecLoader.specFiles(in: [root.appendingPathComponent("FormSpecs").path]).map {
                try String(contentsOfFile: $0, encoding: .utf8)
            }
            var random = Random(state: 20_261_130)
            var rejected = 0
            for round in 0..<1500 {
                let text = mutate(specs[round % specs.count], &random)
                let result = SpecLoader.check(text: text, path: "Fuzz.yaml")
                let lineCount = text.components(separatedBy: "\n").count
                for diagnostic in result.diagnostics {
                    #expect(diagnostic.location.line >= 1 && diagnostic.location.line <= lineCount + 1, "\(diagnostic)\n\(text)")
                    #expect(diagnostic.location.column >= 1)
                    #expect(!diagnostic.message.isEmpty)
                }
                #expect((result.form == nil && result.record == nil) == result.diagnostics.hasErrors)
                if result.form == nil && result.record == nil { rejected += 1 }
            }
            #expect(rejected > 500)  // the mutations do break specs; the test is exercising the error paths
        }
    }
}
