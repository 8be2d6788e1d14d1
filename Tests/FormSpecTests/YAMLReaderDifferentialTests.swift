import FormSyncTesting
import Foundation
import Testing

@testable import FormSpec

/// The Swift YAML reader against libyaml 0.2.5, the C library specs were read with before: every
/// spec in the repository, the broken-spec corpus, a set of YAML's odd corners and thousands of
/// seeded mutations must give the same events (kind, position, text, style, anchor, tag) and, where
/// libyaml refuses, the same refusal: the same problem, context and position. The one difference
/// by design: libyaml reports a control character at 1:1, the Swift reader at the character.
struct YAMLReaderDifferentialTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every YAML file the repository holds as a spec or a broken spec.
    static func corpus() throws -> [String] {
        let folders = ["FormSpecs", "Tests/CorpusForms", "Tests/Evolution", "Tests/FormSpecTests", "Examples"]
        var texts: [String] = []
        for folder in folders {
            let url = root.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(atPath: url.path) else { continue }
            for case let path as String in walker where path.hasSuffix(".yaml") && !path.contains(".build") {
                texts.append(try String(contentsOf: url.appendingPathComponent(path), encoding: .utf8))
            }
        }
        return texts
    }

    /// YAML's corners that specs rarely use but a reader must still get right.
    static let corners: [String] = [
        "", " ", "\n", "# only a comment\n", "---\n", "---\n...\n", "a: 1\n...\n", "a: 1\n...\nb: 2\n", "--- a\n--- b\n",
        "%YAML 1.1\n---\na: 1\n", "%YAML 1.3\n---\na: 1\n", "%YAML 1.1\n%YAML 1.1\n---\n",
        "%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n",
        "a: !e!x 1\n", "%FOO bar\n---\n", "%\n", "a: !<tag:yaml.org,2002:str> b\n", "a: !!str b\n", "a: ! b\n", "a: !x%41 b\n",
        "a: !x%zz b\n", "a: &x 1\nb: *x\n", "a: &x\nb: &\n", "? a\n: b\n", "? - a\n  - b\n: c\n", "[a, b: c, ? d : e]\n",
        "{a: b, c, ? d}\n",
        "{a: [b, {c: d}], e: }\n", "[a, [b, [c]]]\n", "a:\n- b\n- c\nd: e\n", "a:\n  - b\n  -\n  - c\n", "- - a\n  - b\n- c: d\n  e: f\n",
        "a: |\n  line\n   more\n\n  end\n", "a: >\n  folded\n  text\n\n  para\nb: 1\n", "a: |-\n  x\n\n", "a: |+\n  x\n\n\n",
        "a: |2\n   x\n",
        "a: >1-\n  x\n", "a: |0\n x\n", "a: |\n\tx\n", "a: | # c\n  x\n", "a: | x\n", "a: \"x\\ny\\t\\u00e9\\x41\\U0001F600\"\n",
        "a: \"\\q\"\n", "a: \"\\uD800\"\n", "a: \"\\x4\"\n", "a: \"line\n  folded\n\n  kept\"\n", "a: \"x\\\n  y\"\n", "a: 'it''s'\n",
        "a: 'multi\n  line'\n", "a: \"open\n", "a: 'open\n", "a: \"x\n---\ny\"\n", "a: plain\n  continued\n\n  again\n", "a: b: c\n",
        "a:\n\tb: c\n", "a: x\t# tab then comment\n", "a:\t1\n", "- a\n-\tb\n", "a: 1 # c\nb: 2#no\n", "a: -1\nb: - 1\n", "-a: 1\n",
        ":a: 1\n", "?a: 1\n", "a: [1, 2\n", "a: {b: 1\n", "a: ]\n", "a: }\n", "a: ,\n", "[a]: b\n", "{a: b}: c\n", "a: [b, c]: d\n",
        "key: @x\n", "key: `x\n", "a: b\n c: d\n", "a:\n  b: c\n d: e\n", "  a: 1\nb: 2\n", "a:\n  - b\n  c: d\n",
        "a: 1\r\nb: 2\r\n", "a: 1\rb: 2\r", "a: \"x\r\ny\"\r\n", "a: |\r\n  x\r\n  y\r\n", "a: 1\u{85}b: 2\u{85}", "a: x\u{2028}y\n",
        "\u{FEFF}a: 1\n", "a: 1\n\u{FEFF}b: 2\n", "a: é\nß: ü\n", "a: \u{1}\n", "a: \u{7F}\n", "a:\u{A0}1\n", "a: [x:, y]\n", "a: [x:y]\n",
        "{a:1}\n", "{\"a\":1}\n", "[\"a\":1]\n", "a: x:\n", "a: http://x\n", "a: 'x':\n", "\"a\" : 1\n", "a : 1\n", "a:\n-b\n",
        String(repeating: "[", count: 100), String(repeating: "- ", count: 100) + "x\n", String(repeating: "a", count: 1100) + ": 1\n",
        "? " + String(repeating: "b", count: 1100) + "\n: 1\n", "a: " + String(repeating: "x ", count: 800) + "\n",
        "- !!map\n  a: 1\n", "- &a !!str\n- !!str &a x\n", "!x\n", "&a\n", "*a\n", "a: *\n", "a: &\n", "a: !\n", "a: !!\n", "a: !<x\n",
    ]

    static let pieces: [String] = [
        " ", "  ", "\t", "\n", "\r\n", "\r", ":", ": ", "-", "- ", "?", "? ", "#", " #", "[", "]", "{", "}", ",", "'", "\"", "\\", "&a ",
        "*a", "!", "!!str ", "|", ">", "|-", ">+", "|2", "%", "@", "`", "é", "\u{85}", "\u{2028}", "\u{FEFF}", "x", "0", "---", "...",
        "--- ", "%YAML 1.1\n", "%TAG !t! tag:x,2000:\n", "\\x4", "\\u00e9", "''", "\\\n", "\n  ", "\n- ", "\n? ", "\n: ", "a: ", "[a, b]",
        "{a: b}", "\u{1}",
    ]

    /// The spec fuzzer's seeded source (SplitMix64), so a failing mutation replays by its seed.
    typealias Random = SpecFuzzTests.Random

    /// One to four edits: insert a YAML-significant piece, delete, duplicate or swap characters or
    /// whole lines, re-indent a line.
    static func mutate(_ text: String, _ random: inout Random) -> String {
        var characters = Array(text)
        for _ in 0..<(1 + random.below(4)) {
            let at = random.below(characters.count + 1)
            switch random.below(7) {
            case 0, 1:
                characters.insert(contentsOf: pieces[random.below(pieces.count)], at: at)
            case 2:
                if !characters.isEmpty { characters.removeSubrange(at..<min(characters.count, at + 1 + random.below(3))) }
            case 3:
                let end = min(characters.count, at + random.below(12))
                characters.insert(contentsOf: characters[at..<end], at: at)
            case 4:
                if characters.count > 1 {
                    let other = random.below(characters.count)
                    characters.swapAt(min(at, characters.count - 1), other)
                }
            case 5:
                var lines = String(characters).components(separatedBy: "\n")
                let index = random.below(lines.count)
                let other = random.below(lines.count)
                if random.below(2) == 0 { lines.swapAt(index, other) } else { lines.insert(lines[other], at: index) }
                characters = Array(lines.joined(separator: "\n"))
            default:
                var lines = String(characters).components(separatedBy: "\n")
                let index = random.below(lines.count)
                if random.below(2) == 0 {
                    lines[index] = String(repeating: " ", count: 1 + random.below(4)) + lines[index]
                } else {
                    lines[index] = String(lines[index].drop { $0 == " " }.prefix(.max))
                }
                characters = Array(lines.joined(separator: "\n"))
            }
        }
        return String(characters)
    }

    enum Outcome: Equatable {
        case same
        case sameRefusal
        case different(String)
    }

    /// Both parsers' events up to the stream's end or the first refusal.
    static func events(of source: inout some YAMLEventSource) -> (events: [YAMLEvent], error: YAMLSyntaxError?) {
        var events: [YAMLEvent] = []
        for _ in 0..<1_000_000 {
            switch source.next() {
            case .success(let event):
                events.append(event)
                if event.kind == .streamEnd { return (events, nil) }
            case .failure(let error):
                return (events, error)
            }
        }
        return (events, YAMLSyntaxError(problem: "did not end", context: nil, mark: YAMLMark()))
    }

    static func compare(_ text: String) -> Outcome {
        var swift = YAMLParser(text)
        var oracle = LibYAMLEvents(text)
        let mine = events(of: &swift)
        let theirs = events(of: &oracle)
        for (index, (a, b)) in zip(mine.events, theirs.events).enumerated() where a != b {
            return .different("event \(index): Swift \(a), libyaml \(b)")
        }
        if mine.events.count != theirs.events.count {
            return .different(
                "Swift read \(mine.events.count) events, libyaml \(theirs.events.count); errors \(String(describing: mine.error)) / \(String(describing: theirs.error))"
            )
        }
        switch (mine.error, theirs.error) {
        case (nil, nil):
            break
        case (let a?, let b?):
            let controlCharacter = a.problem == "control characters are not allowed"
            if a.problem != b.problem || a.context != b.context || (!controlCharacter && a.mark != b.mark) {
                return .different("Swift refused with \(a), libyaml with \(b)")
            }
            return .sameRefusal
        case (let a?, nil):
            return .different("Swift refused with \(a), libyaml read it")
        case (nil, let b?):
            return .different("libyaml refused with \(b), Swift read it")
        }
        var swiftReader = YAMLReader(path: "x.yaml")
        var oracleReader = YAMLReader(path: "x.yaml")
        var swiftEvents = YAMLParser(text)
        var oracleEvents = LibYAMLEvents(text)
        let a = swiftReader.read(events: &swiftEvents).map(describe)
        let b = oracleReader.read(events: &oracleEvents).map(describe)
        if a != b || swiftReader.diagnostics != oracleReader.diagnostics {
            return .different("trees differ:\n\(a ?? "nil")\n\(b ?? "nil")")
        }
        return .same
    }

    static func describe(_ node: YAMLNode) -> String {
        let at = "@\(node.location.line):\(node.location.column)"
        switch node.kind {
        case .scalar(let text, let plain): return "\(plain ? "" : "q")\(text.debugDescription)\(at)"
        case .sequence(let items): return "[\(items.map(describe).joined(separator: ","))]\(at)"
        case .mapping(let pairs): return "{\(pairs.map { describe($0.key) + ":" + describe($0.value) }.joined(separator: ","))}\(at)"
        case .invalid: return "invalid\(at)"
        }
    }

    @Test func everySpecInTheRepositoryReadsTheSameAsWithLibYAML() async throws {
        try await OffThePool.compute {
            let texts = try Self.corpus()
            #expect(texts.count > 80)
            for text in texts {
                let outcome = Self.compare(text)
                #expect(outcome == .same || outcome == .sameRefusal, "\(outcome)\n---\n\(text)")
            }
        }
    }

    @Test(arguments: corners)
    func yamlCornerCaseReadsTheSameAsWithLibYAML(_ text: String) {
        let outcome = Self.compare(text)
        #expect(outcome == .same || outcome == .sameRefusal, "\(outcome)\n---\n\(text.debugDescription)")
    }

    /// `FORMSYNC_YAML_MUTATIONS=N FORMSYNC_YAML_SEED=S` runs a longer or another search locally.
    @Test func tenThousandMutatedSpecsReadTheSameAsWithLibYAML() async throws {
        try await OffThePool.compute {
            let texts = try Self.corpus() + Self.corners
            let environment = ProcessInfo.processInfo.environment
            let rounds = environment["FORMSYNC_YAML_MUTATIONS"].flatMap { Int($0) }.map { min(max($0, 12_000), 10_000_000) } ?? 12_000
            var random = Random(state: environment["FORMSYNC_YAML_SEED"].flatMap { UInt64($0) } ?? 20_261_203)
            var same = 0
            var refused = 0
            var failures: [String] = []
            for round in 0..<rounds {
                var text = texts[round % texts.count]
                text = Self.mutate(text, &random)
                if round % 3 == 0 { text = Self.mutate(text, &random) }
                switch Self.compare(text) {
                case .same: same += 1
                case .sameRefusal: refused += 1
                case .different(let why):
                    if failures.count < 5 { failures.append("\(why)\n---\n\(text.debugDescription)") }
                }
            }
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n\n"))")
            // Both sides of the grammar are exercised: thousands read, thousands refused.
            #expect(same > 3000)
            #expect(refused > 3000)
            print("YAML differential: \(same) read the same, \(refused) refused the same, \(rounds - same - refused) differ")
        }
    }

    @Test func fourThousandStringsOfYAMLPiecesReadTheSameAsWithLibYAML() async {
        await OffThePool.compute {
            var random = Random(state: 7)
            var failures: [String] = []
            var read = 0
            for _ in 0..<4000 {
                var text = ""
                for _ in 0..<(1 + random.below(30)) {
                    text +=
                        random.below(3) == 0
                        ? ["a", "b: ", "- c", "\n  ", "\n"][random.below(5)] : Self.pieces[random.below(Self.pieces.count)]
                }
                switch Self.compare(text) {
                case .same: read += 1
                case .sameRefusal: break
                case .different(let why):
                    if failures.count < 5 { failures.append("\(why)\n---\n\(text.debugDescription)") }
                }
            }
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n\n"))")
            #expect(read > 400)
        }
    }
}

extension SpecFuzzTests.Random {
    /// A number in 0..<n (0 when n is not positive).
    mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
}
