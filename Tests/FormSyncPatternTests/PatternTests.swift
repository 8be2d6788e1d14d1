import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncPattern

/// FormSync's one pattern engine: whole-value matching (`a|ab` accepts `ab`), ECMA-262's
/// meaning of every construct (held to a real ECMA-262 engine below), linear time on any value,
/// and a clear reason for every pattern it refuses.
struct PatternTests {
    func matches(_ pattern: String, _ value: String) throws -> Bool {
        try Pattern(pattern).matches(value)
    }

    @Test func aLaterAlternativeThatCoversTheWholeValueMatches() throws {
        #expect(try matches("a|ab", "ab"))
        #expect(try matches("a|ab", "a"))
        #expect(try !matches("a|ab", "abc"))
        #expect(try matches("(?:x|xy)z?", "xyz"))
        #expect(try matches("[0-9]{1,3}|[0-9]{1,3}\\.[0-9]", "12.5"))
    }

    @Test func classEscapesMeanWhatECMAScriptSaysEvenBeyondASCII() throws {
        #expect(try !matches("\\w+", "café"), "\\w is ASCII")
        #expect(try !matches("\\d", "٣"), "\\d is 0-9")
        #expect(try matches("\\D", "٣"))
        for space in ["\u{A0}", "\u{FEFF}", "\u{3000}", "\u{2028}", "\u{1680}", "\u{B}"] {
            #expect(try matches("\\s", space), "U+\(String(space.unicodeScalars.first!.value, radix: 16))")
        }
        #expect(try !matches("\\s", "\u{85}"), "NEL is not ECMAScript white space")
        #expect(try !matches("\\s", "\u{180E}"))
        #expect(try matches(".", "\u{85}") && !matches(".", "\u{2029}") && !matches(".", "\n"))
        #expect(try matches(".", "😀"), "one code point, as with the u flag")
        #expect(try matches("[^a]", "😀"))
    }

    @Test func anchorsAtTheVeryEndsAreAcceptedAndMeanNothingMore() throws {
        let anchored = try Pattern("^[A-Z]{3}$")
        #expect(anchored.body == "[A-Z]{3}")
        #expect(anchored.matches("ABC") && !anchored.matches("ABCD"))
        #expect(try Pattern("a\\$").body == "a\\$", "an escaped $ stays")
        #expect(try Pattern("a\\\\$").body == "a\\\\", "after an escaped backslash, $ is an anchor")
        #expect(!Pattern.problems("a^b").isEmpty && !Pattern.problems("a$b").isEmpty)
    }

    @Test(arguments: [
        "(a+)+", "(a|aa)*", "(x?)*", "a{2,1}", "a{1001}", "\\1", "(?=a)", "(?<n>a)", "(?i)a", "\\bword", "\\p{L}", "a*?", "a++",
        "a**", "[[:alpha:]]", "[a", "(a", "a)", "\\", "*a", "]", "}", "[]", "[^]", "\\@", "\\-", "[\\d-z]", "[z-a]", "\\q",
        "(?:(?:(?:(?:(?:(?:(?:(?:(?:(?:(?:(?:(?:(?:(?:(?:(?:a)))))))))))))))))", "(?:[a-z]{1000}){25}",
    ])
    func aPatternOutsideTheLanguageIsRefusedWithItsReason(_ pattern: String) {
        let problems = Pattern.problems(pattern)
        #expect(!problems.isEmpty, "\(pattern) was accepted")
        #expect(problems.allSatisfy { !$0.isEmpty })
    }

    @Test func matchingIsLinearInTheValueWhateverThePatternAndValue() async throws {
        try await OffThePool.compute {
            // Adjacent unbounded quantifiers over classes that overlap, on long non-ASCII values: a
            // backtracking engine takes time exponential or polynomial in the value here.
            let value = String(repeating: "é", count: 100_000) + "!"
            for source in ["\\w*\\w*\\w*\\w*\\d", "[^x]*[^y]*[^z]*x", "[\\S\\s]*x", "\\W*\\W*\\W*\\W*\\W*\\d"] {
                let pattern = try Pattern(source)
                #expect(!pattern.matches(value), "\(source)")
                #expect(pattern.instructionCount < 40)
            }
            let wide = try Pattern("[a-z]{0,1000}b")
            #expect(!wide.matches(String(repeating: "a", count: 20_000)))
        }
    }

    /// Random patterns of the language and random values: each answer must be ECMA-262's, as
    /// `new RegExp("^(?:" + body + ")$", "u")` gives it in Node.js, and every accepted pattern
    /// must compile there.
    @Test func everyAnswerIsTheAnswerOfARealECMAScriptEngine() async throws {
        try await OffThePool.run {
            guard
                let node = ["/usr/bin/node", "/usr/local/bin/node", "/usr/bin/nodejs"].first(where: {
                    FileManager.default.isExecutableFile(atPath: $0)
                })
            else {
                Issue.record("Node.js is needed to compare with a real ECMA-262 engine: apt-get install nodejs (.ci/run installs it)")
                return
            }
            var generator = SeededGenerator(seed: 2026)
            let atoms = [
                "a", "b", "ab", ".", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "[a-c]", "[^ab]", "[\\d_]", "[\\s\\w]", "é", "😀", "\\.",
                "\\-?",
                "-", "[-a]", "[a\\-z]",
            ]
            let quantifiers = ["", "", "", "?", "*", "+", "{2}", "{1,3}", "{0,2}", "{2,}"]
            func piece(_ depth: Int) -> String {
                let roll = Int.random(in: 0..<10, using: &generator)
                if depth < 2 && roll == 0 {
                    let inner = (0..<Int.random(in: 1...2, using: &generator)).map { _ in atoms.randomElement(using: &generator)! }.joined()
                    return "(?:" + inner + "|" + atoms.randomElement(using: &generator)! + ")" + ["", "?", "{2}"].randomElement(
                        using: &generator)!
                }
                return atoms.randomElement(using: &generator)! + quantifiers.randomElement(using: &generator)!
            }
            let alphabet = ["a", "b", "c", "1", "_", " ", "\u{A0}", "é", "😀", "-", ".", "\n", "\u{FEFF}", "٣", "z"]
            var cases: [(pattern: Pattern, value: String)] = []
            var accepted = 0
            while cases.count < 20_000 {
                var source = (0..<Int.random(in: 1...4, using: &generator)).map { _ in piece(0) }.joined()
                if Int.random(in: 0..<5, using: &generator) == 0 { source += "|" + piece(0) }
                guard let pattern = try? Pattern(source) else { continue }
                accepted += 1
                for _ in 0..<10 {
                    cases.append(
                        (
                            pattern,
                            (0..<Int.random(in: 0...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined()
                        ))
                }
            }
            let input = try JSONSerialization.data(withJSONObject: cases.map { [$0.pattern.body, $0.value] })
            let script = """
                const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
                const out = cases.map(([p, v]) => { try { return new RegExp('^(?:' + p + ')$', 'u').test(v) ? 1 : 0; } catch (e) { return 2; } });
                process.stdout.write(JSON.stringify(out));
                """
            let process = Process()
            process.executableURL = URL(fileURLWithPath: node)
            process.arguments = ["-e", script]
            let stdin = Pipe()
            let stdout = Pipe()
            process.standardInput = stdin
            process.standardOutput = stdout
            try process.run()
            let writer = Thread {
                stdin.fileHandleForWriting.write(input)
                try? stdin.fileHandleForWriting.close()
            }
            writer.start()
            let output = stdout.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let verdicts = try #require(try JSONSerialization.jsonObject(with: output) as? [Int])
            #expect(verdicts.count == cases.count)
            var differences = 0
            for (index, (pattern, value)) in cases.enumerated() where index < verdicts.count {
                #expect(verdicts[index] != 2, "ECMA-262 refuses \(pattern.source)")
                let ours = pattern.matches(value)
                if (verdicts[index] == 1) != ours {
                    differences += 1
                    if differences <= 5 {
                        Issue.record("\(pattern.source) on \(value.debugDescription): ECMA-262 \(verdicts[index] == 1), FormSync \(ours)")
                    }
                }
            }
            #expect(differences == 0)
            #expect(accepted > 1000 && Set(verdicts).isSuperset(of: [0, 1]), "the corpus exercises both answers")
        }
    }
}

/// A small deterministic generator (SplitMix64) so that a failure can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
