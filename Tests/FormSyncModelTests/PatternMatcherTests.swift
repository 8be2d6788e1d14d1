import Foundation
import FormSyncTesting
import Testing

@testable import FormSyncModel

/// `PatternMatcher` must answer exactly as `NSRegularExpression` did before it (the first match
/// from the start covers the whole value), for every pattern it agrees to compile.
struct PatternMatcherTests {
    func reference(_ pattern: String, _ value: String) throws -> Bool {
        FieldValidator.regexMatchesWhole(try NSRegularExpression(pattern: pattern), value)
    }

    @Test func everyPatternOfTheShippedSpecsIsCompiledAndMatchesAsBefore() throws {
        let cases: [(String, [String])] = [
            ("[A-Z0-9-]{4,20}", ["SKU-10000", "AB-1", "ab-1234", "ABCD", String(repeating: "A", count: 21), "ABC D", "ABCD\n"]),
            ("[A-Z]{2}[0-9A-Z]{8,12}", ["DE12345678", "DE1234567", "de12345678", "DE1234567890AB", "DE12345678901"]),
            ("[^@ ]+@[^@ ]+\\.[a-z]{2,}", ["a@b.de", "a@b@c.de", "a b@c.de", "a@b.c", "ä@ö.info", "a@b.de\n", "@b.de"]),
            ("[A-Z]{3}-[0-9]{4}", ["ABC-1234", "ABC-123", "ABC-12345", "ABC-١٢٣٤", "abc-1234"]),
        ]
        for (pattern, values) in cases {
            let matcher = try #require(PatternMatcher(pattern), "\(pattern) falls back to NSRegularExpression")
            for value in values {
                #expect(matcher.matchesWhole(value) == (try reference(pattern, value)), "\(pattern) on \(value.debugDescription)")
            }
        }
    }

    @Test func classEscapesAndTheDotMeanWhatICUMeansForEveryScalarTried() throws {
        var scalars = (0...0x3100).compactMap(Unicode.Scalar.init)
        scalars += stride(from: 0x3101, through: 0x10FFFF, by: 97).compactMap { Unicode.Scalar(UInt32($0)) }
        for pattern in ["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", ".", "[\\d\\s]", "[^\\w]"] {
            let matcher = try #require(PatternMatcher(pattern))
            let regex = try NSRegularExpression(pattern: pattern)
            var disagreements: [String] = []
            var undecided = 0
            for scalar in scalars {
                let value = String(Character(scalar))
                guard value.unicodeScalars.count == 1 else { continue }
                if let answer = matcher.matchesWhole(value) {
                    if answer != FieldValidator.regexMatchesWhole(regex, value) { disagreements.append(String(format: "U+%04X", scalar.value)) }
                } else {
                    #expect(scalar.value >= 0x80 && pattern != ".", "\(pattern) left U+\(String(scalar.value, radix: 16)) undecided")
                    undecided += 1
                }
            }
            #expect(disagreements.isEmpty, "\(pattern) disagrees on \(disagreements.prefix(10))")
        }
    }

    @Test func theFirstMatchByPriorityDecidesNotAnyMatch() throws {
        // A backtracking engine stops at the first alternative that matches: `a|ab` never
        // covers "ab", although a path through the pattern does.
        for (pattern, value, expected) in [
            ("a|ab", "ab", false), ("ab|a", "ab", true), ("(?:a|ab)(?:c|bcd)", "abcd", true), ("a*?", "aa", false),
            ("(?:a|ab)c", "abc", true), ("a{2,3}", "aaaa", false), ("(a|b)*c", "ababc", true), ("(?:)*a", "a", true),
        ] {
            if let matcher = PatternMatcher(pattern) {
                #expect(matcher.matchesWhole(value) == expected, "\(pattern) on \(value)")
            }
            #expect(try reference(pattern, value) == expected, "NSRegularExpression: \(pattern) on \(value)")
        }
    }

    @Test func randomPatternsAndValuesGetTheSameAnswerAsNSRegularExpression() throws {
        var random = SplitMix64(state: 2026)  // the same cases on every run
        let literals = ["a", "b", "c", "-", "@", " ", "é", "1", "\\.", "\\-", "\\n", "\\t", "\\/", "_"]
        let classes = ["[ab]", "[a-c]", "[^a]", "[\\d]", "[^@ ]", "[a-z0-9-]", "[\\s\\w]", "[-a]", "[a-]", "[^\\D]", "[é-ü]", "[\\.\\-]"]
        let escapes = ["\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "."]
        let quantifiers = ["", "", "", "?", "*", "+", "{2}", "{1,}", "{0,2}", "{1,3}", "{0}"]
        func below(_ n: Int) -> Int { Int.random(in: 0..<n, using: &random) }
        func pick(_ items: [String]) -> String { items[below(items.count)] }
        func alternation(_ depth: Int) -> String {
            (0..<(1 + below(3))).map { _ in sequence(depth) }.joined(separator: "|")
        }
        func sequence(_ depth: Int) -> String {
            (0..<(1 + below(4))).map { _ in
                var atom: String
                switch below(depth < 2 ? 5 : 4) {
                case 0, 1: atom = pick(literals)
                case 2: atom = pick(classes)
                case 3: atom = pick(escapes)
                default: atom = (below(2) == 0 ? "(" : "(?:") + alternation(depth + 1) + ")"
                }
                return atom + pick(quantifiers)
            }.joined()
        }
        let alphabet = ["a", "b", "c", "-", "@", ".", " ", "1", "٣", "é", "\n", "\r", "\u{0B}", "\u{0C}", "\u{85}", "\u{2028}", "_", "\u{200C}", "Z", "😀", "/", "\t"]
        var compiled = 0
        var compared = 0
        var disagreements: [String] = []
        var left = 0
        for _ in 0..<3000 {
            let pattern = alternation(0)
            guard let matcher = PatternMatcher(pattern) else { continue }
            compiled += 1
            let regex = try NSRegularExpression(pattern: pattern)
            for _ in 0..<20 {
                let value = (0..<below(7)).map { _ in pick(alphabet) }.joined()
                guard let answer = matcher.matchesWhole(value) else {
                    left += 1
                    continue
                }
                compared += 1
                if answer != FieldValidator.regexMatchesWhole(regex, value) { disagreements.append("\(pattern.debugDescription) on \(value.debugDescription)") }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements, the shortest: \(disagreements.sorted { $0.count < $1.count }.prefix(12))")
        #expect(compiled > 2000, "only \(compiled) of 3000 patterns compiled")
        #expect(compared > 30_000, "only \(compared) values were decided (\(left) left to NSRegularExpression)")
    }

    @Test func whatItDoesNotHandleIsLeftToNSRegularExpressionAndStillChecked() {
        for pattern in ["[[a]]", "[a&&b]", "[]a]", "\\p{L}", "\\bA", "a{2}{3}", "a*?", "a++", "(?i)a", "(?=a)a", "a{1001}", "(a{1000}){30}", "[a-c-e]", "\\é", "[b-a]"] {
            #expect(PatternMatcher(pattern) == nil, "\(pattern)")
        }
        var validator = FieldValidator()
        validator.pattern("A", "\\p{Lu}", at: "#/a")
        validator.pattern("a", "\\p{Lu}", at: "#/b")
        validator.pattern("a", "[b-a]", at: "#/c")
        #expect(validator.errors.map(\.pointer) == ["#/b", "#/c"])
        #expect(validator.errors.map(\.detail) == ["Does not have the expected format.", "The pattern of this field is not a valid regular expression."])
    }
}
