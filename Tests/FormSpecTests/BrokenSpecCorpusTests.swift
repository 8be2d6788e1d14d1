import Foundation
import Testing

@testable import FormSpec

/// Every file in BrokenSpecs/ is a spec with mistakes; its `.expected` sibling lists the exact
/// diagnostics (`line:column: severity: message`), all of them, in order.
struct BrokenSpecCorpusTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("BrokenSpecs")

    static func specNames() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted()
    }

    @Test func theCorpusHoldsAtLeastThirtyDistinctBrokenSpecs() throws {
        let names = Self.specNames()
        #expect(names.count >= 30)
        let texts = try names.map { try String(contentsOf: Self.folder.appendingPathComponent($0), encoding: .utf8) }
        #expect(Set(texts).count == texts.count)
    }

    @Test(arguments: specNames())
    func brokenSpecReportsExactlyItsExpectedDiagnostics(_ name: String) throws {
        let path = Self.folder.appendingPathComponent(name).path
        let expectedPath = String(path.dropLast(".yaml".count)) + ".expected"
        let expected = try String(contentsOfFile: expectedPath, encoding: .utf8)
            .split(separator: "\n").map(String.init)
        let result = SpecLoader.check(fileAt: path)
        let actual = result.diagnostics.map { d -> String in
            #expect(d.path == path)
            return "\(d.location.line):\(d.location.column): \(d.severity.rawValue): \(d.message)"
        }
        #expect(actual == expected)
        #expect(!actual.isEmpty)
        if expected.contains(where: { $0.contains(": error: ") }) {
            #expect(result.form == nil)
        } else {
            #expect(result.form != nil)
        }
    }

    @Test func aFileWithSeveralProblemsReportsAllOfThemSorted() throws {
        let result = SpecLoader.check(fileAt: Self.folder.appendingPathComponent("36-many-problems-at-once.yaml").path)
        #expect(result.diagnostics.filter { $0.severity == .error }.count == 7)
        #expect(result.diagnostics.map(\.location) == result.diagnostics.map(\.location).sorted())
    }
}
