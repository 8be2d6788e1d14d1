import FormSyncProtocol
import Foundation
import Testing

/// The error codes are spelled once: `ProblemCode` and docs/PROTOCOL.md's table agree code by
/// code and status by status, and no source outside FormSyncProtocol writes or compares a code
/// as a string.
struct ProblemCodeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The `(status, code)` pairs of PROTOCOL.md's "Error codes" table.
    static func documented() throws -> [(status: Int, code: String)] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        let start = try #require(text.range(of: "## 5. Error codes"))
        let section = text[start.upperBound...].prefix { _ in true }
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        var pairs: [(Int, String)] = []
        for line in section[..<end].split(separator: "\n") where line.hasPrefix("| ") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, let status = Int(cells[1]) else { continue }
            for code in cells[2].split(separator: "`", omittingEmptySubsequences: false).enumerated() where code.offset % 2 == 1 {
                pairs.append((status, String(code.element)))
            }
        }
        return pairs
    }

    @Test func theProtocolsTableListsEveryCodeWithItsStatusAndNoOther() throws {
        let documented = try Self.documented()
        #expect(documented.count > 40, "the table was not found or not read: \(documented.count) codes")
        let table = Dictionary(documented.map { ($0.code, $0.status) }, uniquingKeysWith: { first, _ in first })
        #expect(table.count == documented.count, "a code is listed twice in PROTOCOL.md")
        for code in ProblemCode.allCases {
            #expect(
                table[code.rawValue] == code.status,
                "\(code.rawValue): \(code.status) here, \(table[code.rawValue].map(String.init) ?? "absent") in PROTOCOL.md")
        }
        let unknown = Set(table.keys).subtracting(ProblemCode.allCases.map(\.rawValue))
        #expect(unknown.isEmpty, "PROTOCOL.md lists codes ProblemCode does not have: \(unknown.sorted())")
    }

    /// A code spelled as a string where a problem's code is written or compared.
    static func spelledCodes(in text: String) -> [String] {
        let codes = Set(ProblemCode.allCases.map(\.rawValue))
        var found: [String] = []
        for marker in ["code: \"", "\"code\": \"", "\"code\":\"", ".code == \"", "as? String == \""] {
            var rest = text[...]
            while let range = rest.range(of: marker) {
                let tail = rest[range.upperBound...]
                let word = String(tail.prefix { $0 != "\"" })
                if codes.contains(word) { found.append(word) }
                rest = tail
            }
        }
        return found
    }

    @Test func noSourceOutsideTheProtocolModuleSpellsACode() throws {
        let sources = Self.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var offenders: [String] = []
        for case let url as URL in files where url.pathExtension == "swift" && !url.path.contains("/Sources/FormSyncProtocol/") {
            let text = try String(contentsOf: url, encoding: .utf8)
            for code in Self.spelledCodes(in: text) { offenders.append("\(url.path.dropFirst(sources.path.count + 1)): \(code)") }
        }
        #expect(offenders.isEmpty, "\(offenders)")
    }

    @Test func theScanFindsEachWayOfSpellingACode() {
        #expect(Self.spelledCodes(in: #"return .problem(409, "Conflict", code: "key-in-flight")"#) == ["key-in-flight"])
        #expect(Self.spelledCodes(in: #"["code": "file-mismatch"]"#) == ["file-mismatch"])
        #expect(Self.spelledCodes(in: #"reply.code == "bad-token""#) == ["bad-token"])
        #expect(Self.spelledCodes(in: #"$0["code"] as? String == "busy""#) == ["busy"])
        #expect(Self.spelledCodes(in: #"FieldError(code: "required")"#).isEmpty, "a field rule's code is not a problem code")
    }

    /// The string literals of a source that spell one of `names`, ignoring case.
    static func spelledNames(in text: String, _ names: [String]) -> [String] {
        let wanted = Set(names.map { $0.lowercased() })
        var found: [String] = []
        for (index, part) in text.components(separatedBy: "\"").enumerated() where index % 2 == 1 && wanted.contains(part.lowercased()) {
            found.append(part)
        }
        return found
    }

    @Test func noSourceOutsideTheProtocolModuleSpellsAHeaderOrFeatureName() throws {
        let sources = Self.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var offenders: [String] = []
        var scanned = 0
        for case let url as URL in files where url.pathExtension == "swift" && !url.path.contains("/Sources/FormSyncProtocol/") {
            scanned += 1
            let text = try String(contentsOf: url, encoding: .utf8)
            for name in Self.spelledNames(in: text, ProtocolHeader.all + Feature.allCases.map(\.rawValue)) {
                offenders.append("\(url.path.dropFirst(sources.path.count + 1)): \(name)")
            }
        }
        #expect(scanned > 100)
        #expect(offenders.isEmpty, "\(offenders)")
        #expect(Self.spelledNames(in: #"request.header("formsync-workspace")"#, ProtocolHeader.all) == ["formsync-workspace"])
        #expect(Self.spelledNames(in: #"["Upload-Offset": "0"]"#, ProtocolHeader.all) == ["Upload-Offset"])
        #expect(Self.spelledNames(in: #"features.contains("deferred-files")"#, Feature.allCases.map(\.rawValue)) == ["deferred-files"])
    }
}
