import Foundation
import Testing

/// README.md's Swift examples are the ones that run: each block is in
/// `ReadmeExamples.swift` (or, for the manifest, is `Examples/FieldApp/Package.swift`), verbatim.
struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func normalized(_ text: String) -> [String] {
        text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    @Test func everySwiftExampleInTheREADMEIsOneThatRuns() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let examples = try String(contentsOf: Self.root.appendingPathComponent("Tests/EndToEndTests/ReadmeExamples.swift"), encoding: .utf8)
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Examples/FieldApp/Package.swift"), encoding: .utf8)
        let blocks = readme.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```").first ?? "" }
        #expect(blocks.count >= 6)
        let runnable = Self.normalized(examples).joined(separator: "\n")
        for block in blocks {
            let lines = Self.normalized(block).joined(separator: "\n")
            #expect(
                runnable.contains(lines) || Self.normalized(manifest).joined(separator: "\n") == lines,
                "README example not run by a test:\n\(block.prefix(300))")
        }
    }
}
