import FormSyncTesting
import Foundation
import Testing

@testable import FormSpec
@testable import FormSyncCodegen

/// The checker's limits bound what the generator writes: the largest spec they allow (every
/// field it may hold, lists nested as deep as they may go) gives a file of bounded size.
struct GeneratedSizeTests {
    @Test func theLargestSpecTheCheckerAllowsGeneratesABoundedFile() async throws {
        try await OffThePool.compute {
            // Three nested lists, each level with as many fields as the total allows.
            let perLevel = (SpecChecker.maxFields - 3) / 4
            func fields(_ level: Int, indent: String) -> String {
                var text = (0..<perLevel).map { "\(indent)f\(level)x\($0): { type: text, max_length: 40, pattern: \"[A-Z]{2}[0-9]{3}\" }" }
                    .joined(separator: "\n")
                if level < SpecChecker.maxListDepth {
                    text +=
                        "\n\(indent)nested\(level):\n\(indent)  type: list\n\(indent)  fields:\n"
                        + fields(level + 1, indent: indent + "    ")
                }
                return text
            }
            let spec = "form: Visit\nversion: 1\nendpoint: /visits\nfields:\n" + fields(0, indent: "  ") + "\n"
            let result = SpecLoader.check(text: spec, path: "Visit.yaml")
            let form = try #require(result.form, "\(result.diagnostics.prefix(3))")
            let files = GeneratedFile.outputs(for: form)
            let bytes = files.reduce(0) { $0 + $1.contents.utf8.count }
            #expect(bytes < 4 << 20, "\(bytes) bytes")
            #expect(bytes > 100_000)  // it really is the large case
        }
    }
}
