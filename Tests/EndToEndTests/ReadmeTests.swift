import FormSyncTesting
import Foundation
import Testing

/// The Swift examples of README.md and of the guide in docs/ are the ones that run: each block is
/// in `ReadmeExamples.swift` (or, for the manifest, is `Examples/FieldApp/Package.swift`). Blocks
/// are compared token for token: spacing and line breaks may differ (the formatter owns those).
struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func squeezed(_ text: String) -> String {
        String(text.unicodeScalars.filter { !CharacterSet.whitespacesAndNewlines.contains($0) }.map(Character.init))
    }

    static func swiftBlocks(_ markdown: String) -> [String] {
        markdown.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```").first ?? "" }
    }

    static func pages() throws -> [(name: String, text: String)] {
        let docs = Self.root.appendingPathComponent("docs")
        let names = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }.sorted()
        // Each module's DocC landing page too (issue 44: DocC showed calls README had dropped).
        let sources = Self.root.appendingPathComponent("Sources")
        var catalogs: [String] = []
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted() {
            let catalog = "Sources/\(module)/\(module).docc/\(module).md"
            if FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(catalog).path) { catalogs.append(catalog) }
        }
        return try [("README.md", String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8))]
            + names.map { ("docs/" + $0, try String(contentsOf: docs.appendingPathComponent($0), encoding: .utf8)) }
            + catalogs.map { ($0, try String(contentsOf: Self.root.appendingPathComponent($0), encoding: .utf8)) }
    }

    @Test func everySwiftExampleInTheREADMEAndTheGuideIsOneThatRuns() async throws {
        try await OffThePool.run {
            let examples = try String(
                contentsOf: Self.root.appendingPathComponent("Tests/EndToEndTests/ReadmeExamples.swift"), encoding: .utf8)
            let manifest = try String(contentsOf: Self.root.appendingPathComponent("Examples/FieldApp/Package.swift"), encoding: .utf8)
            let doccExamples = try String(
                contentsOf: Self.root.appendingPathComponent("Tests/EndToEndTests/DocCExamples.swift"), encoding: .utf8)
            let runnable = Self.squeezed(examples + "\n" + doccExamples)
            // A block may also show generated code: it must be what the generator wrote.
            let generated = try Self.files(in: "Generated", ending: ".swift").map(Self.squeezed)
            var count = 0
            for (name, text) in try Self.pages() {
                for block in Self.swiftBlocks(text) {
                    count += 1
                    let squeezed = Self.squeezed(block)
                    #expect(
                        runnable.contains(squeezed) || Self.squeezed(manifest) == squeezed || generated.contains { $0.contains(squeezed) },
                        "\(name): example not run by a test:\n\(block.prefix(300))")
                }
            }
            #expect(count >= 6)
        }
    }

    static func files(in folder: String, ending suffix: String) throws -> [String] {
        let url = Self.root.appendingPathComponent(folder)
        return try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasSuffix(suffix) }
            .map { try String(contentsOf: url.appendingPathComponent($0), encoding: .utf8) }
    }

    @Test func theREADMEsSpecsAreExcerptsOfExampleSpecsThatCheck() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let blocks = readme.components(separatedBy: "```yaml\n").dropFirst().map { $0.components(separatedBy: "```").first ?? "" }
        #expect(!blocks.isEmpty)
        // FormSpecs/ is checked by the build (the plugin) and by CommandLineTests.
        let specs = try Self.files(in: "FormSpecs", ending: ".yaml").map(Self.squeezed)
        for block in blocks {
            #expect(specs.contains { $0.contains(Self.squeezed(block)) }, "README spec excerpt found in no example spec:\n\(block)")
        }
    }

    @Test func theComparisonTellsAnEditedExampleFromARunOne() {
        let run = Self.squeezed("let x = outbox.pull()  // pages\nprint(x)")
        #expect(run.contains(Self.squeezed("let x =\n    outbox.pull()   // pages")))
        #expect(!run.contains(Self.squeezed("let x = outbox.pull(limit: 5)")))
    }

    @Test func theReadmeIsAFrontDoorWithAContentsAndEveryGuideLinkResolves() throws {
        let pages = try Self.pages()
        let readme = try #require(pages.first { $0.name == "README.md" }?.text)
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count <= 300)
        #expect(readme.contains("## Contents"))
        // Every relative link of every page names a file that exists.
        let link = try NSRegularExpression(pattern: #"\]\(([^)#:\s]+\.md)(#[^)]*)?\)"#)
        for (name, text) in pages {
            let folder = Self.root.appendingPathComponent(name).deletingLastPathComponent()
            for match in link.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let range = Range(match.range(at: 1), in: text) else { continue }
                let target = folder.appendingPathComponent(String(text[range])).standardizedFileURL.path
                #expect(FileManager.default.fileExists(atPath: target), "\(name) links to \(text[range]), which does not exist")
            }
        }
    }
}
