import FormSyncPattern
import Foundation
import Testing

@testable import FormSpec

/// No spec, however deep or large, overflows the compiler's stack or makes it write without end;
/// no pattern it accepts can backtrack catastrophically.
struct BoundedWorkTests {
    func check(_ text: String) -> CheckedSpec {
        SpecLoader.check(text: text, path: "Spec.yaml")
    }

    @Test(arguments: ["[", "{a: "])
    func fifteenThousandNestedCollectionsAreAClearErrorNotACrash(_ opener: String) {
        let text = "form: Visit\nversion: 1\nendpoint: /v\nfields: " + String(repeating: opener, count: 15_000)
        let result = check(text)
        #expect(result.form == nil)
        #expect(result.diagnostics.contains { $0.message.contains("nests deeper than \(YAMLReader.maxDepth) levels") })
    }

    @Test func aFormWithTooManyFieldsIsRefusedOnce() {
        let fields = (0..<700).map { "  f\($0): text" }.joined(separator: "\n")
        let result = check("form: Visit\nversion: 1\nendpoint: /v\nfields:\n" + fields + "\n")
        #expect(result.form == nil)
        let errors = result.diagnostics.filter { $0.message.contains("at most \(SpecChecker.maxFields) fields") }
        #expect(errors.count == 1)
        #expect(errors.first?.location.line == 4 + SpecChecker.maxFields + 1)
    }

    @Test(arguments: [
        "(a+)+", "(a*)*", "(a|aa)*", "(a|b)+", "(x?)*", "((ab)+)+", "(a{2,3})+", "a**", "(?=a)", "(?<n>a)", "(?i)a", "\\bword",
        "\\p{L}", "(a)\\1", "a^bc$", "a+?", "[[:alpha:]]", "\\q", "a{1001}", "a{3,2}", "*a", "(ab", "ab)",
    ])
    func aPatternOutsideThePortableSubsetIsRefused(_ pattern: String) {
        #expect(!Pattern.problems(pattern).isEmpty, "\(pattern)")
    }

    @Test(arguments: [
        "[A-Z]{2}[0-9A-Z]{8,12}", "[^@ ]+@[^@ ]+\\.[a-z]{2,}", "[A-Z0-9-]{4,20}", "[A-Z]{3}-[0-9]{4}", "(?:ab){2}c+",
        "(\\d{3}-)+\\d{4}", "colou?r", "(red|green|blue)", "a|b|c", "[.]+", "\\(\\d+\\)", "^abc$", "^[A-Z]{3}$",
    ])
    func aPortablePatternIsAccepted(_ pattern: String) {
        #expect(Pattern.problems(pattern).isEmpty, "\(pattern): \(Pattern.problems(pattern))")
    }
}
