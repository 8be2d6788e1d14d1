import FormSpec
import FormSyncClient
@_spi(Generated) import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncAuthoring

/// The preview page's decimals and integers against `ExactDecimal` and `Formula`, in Node.js (a
/// real ECMAScript engine): every sum, difference, product, quotient and comparison of
/// thousands of seeded pairs — ties of `div`'s rounding, overflows and 38-digit edges among them
/// — must give the same digits or the same "unknown".
struct PreviewRuntimeTests {
    static let node = ["/usr/bin/node", "/usr/local/bin/node", "/usr/bin/nodejs"].first { FileManager.default.isExecutableFile(atPath: $0) }

    static func pairs() -> [(String, String)] {
        var random = SplitMix64(state: 36)
        func digits(_ count: Int) -> String {
            String((0..<count).map { _ in Character(String(random.next() % 10)) }).replacingOccurrences(
                of: "^0+(?=.)", with: "", options: .regularExpression)
        }
        func decimal() -> String {
            let roll = random.next() % 10
            if roll == 0 { return ["0", "1", "-1", "2", "0.5", "3", "7", "4096", "2048", "0.00048828125"][Int(random.next() % 10)] }
            let whole = digits(1 + Int(random.next() % (roll == 1 ? 38 : 12)))
            let fraction = random.next() % 2 == 0 ? "" : "." + digits(1 + Int(random.next() % 14))
            let text = whole + fraction
            return (random.next() % 3 == 0 ? "-" : "") + text
        }
        var pairs: [(String, String)] = []
        for _ in 0..<4000 { pairs.append((decimal(), decimal())) }
        // Ties at the tenth place: 1/2^11 is 0.00048828125.
        for k in 1...20 { pairs.append((String(k), "2048")) }
        pairs.append(("99999999999999999999999999999999999999", "1"))
        pairs.append(("99999999999999999999999999999999999999", "99999999999999999999999999999999999999"))
        return pairs
    }

    @Test func thePagesDecimalsGiveExactDecimalsDigits() async throws {
        try await OffThePool.run {
            let node = try #require(Self.node, "Node.js is needed: apt-get install nodejs (.ci/run installs it)")
            let pairs = Self.pairs()
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("runtime-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let program = """
                \(PreviewRuntime.logic)
                const pairs = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
                const t = (d) => (d === null ? null : FS.decText(d));
                const out = pairs.map(([a, b]) => {
                  const x = FS.decOf(a), y = FS.decOf(b);
                  return [t(FS.addDec(x, y)), t(FS.subDec(x, y)), t(FS.mulDec(x, y)), t(FS.divDec(x, y)), FS.cmpDec(x, y)];
                });
                process.stdout.write(JSON.stringify(out));
                """
            let programFile = folder.appendingPathComponent("check.js")
            let inputFile = folder.appendingPathComponent("pairs.json")
            try program.write(to: programFile, atomically: true, encoding: .utf8)
            try JSONSerialization.data(withJSONObject: pairs.map { [$0.0, $0.1] }).write(to: inputFile)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: node)
            process.arguments = [programFile.path, inputFile.path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let results = try #require(try JSONSerialization.jsonObject(with: data) as? [[Any]])
            #expect(results.count == pairs.count)
            var unknown = 0
            var ties = 0
            for ((a, b), page) in zip(pairs, results) {
                let x = ExactDecimal(text: a)
                let y = ExactDecimal(text: b)
                let swift: [String?] = [
                    Formula.add(x, y)?.description, Formula.subtract(x, y)?.description, Formula.multiply(x, y)?.description,
                    Formula.divide(x, y)?.description,
                ]
                let script = page.prefix(4).map { $0 as? String }
                #expect(script == swift, "\(a) and \(b)")
                let order: Int? = x.flatMap { x in y.map { y in x < y ? -1 : y < x ? 1 : 0 } }
                #expect((page[4] as? Int) == order, "\(a) compared with \(b)")
                unknown += swift.filter { $0 == nil }.count
                if b == "2048" { ties += 1 }
            }
            // The pairs reach "unknown" (an overflow past 38 digits) as well as digits.
            #expect(unknown >= 20)
            #expect(ties >= 20)
        }
    }
}

/// The preview's generated script and pages carry a spec's texts without letting them out.
struct PreviewScriptGeneratorTests {
    @Test func aSpecsTextCannotCloseThePagesScriptOrWriteMarkup() throws {
        let spec = """
            form: Visit
            version: 1
            endpoint: /visits
            description: "</script><script>alert(1)</script>"
            fields:
              note:
                type: text
                label: "<b>bold</b>"
                constraint: length(note) < 5
                constraint_message: "</script><img src=x onerror=alert(1)>\\u2028"
            """
        let form = try #require(SpecLoader.check(text: spec, path: "Visit.yaml").form)
        let script = PreviewScriptGenerator.script(for: form)
        #expect(!script.contains("</script"))
        #expect(!script.contains("<img"))
        #expect(!script.contains("\u{2028}"))
        #expect(script.contains("\\u003c/script>\\u003cimg src=x onerror=alert(1)>\\u2028"))
        let page = PreviewPage.form(form, diagnostics: [], version: "v")
        #expect(!page.contains("<script>alert(1)"))
        #expect(page.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"))
    }
}
