import Foundation
import Testing

@testable import FormSpec

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

struct SpecCheckerTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func check(_ text: String) -> CheckedSpec {
        SpecLoader.check(text: text, path: "Spec.yaml")
    }

    @Test func everyExampleSpecChecksCleanAndTogetherTheyUseEveryFieldType() throws {
        let files = SpecLoader.specFiles(in: [Self.root.appendingPathComponent("FormSpecs").path])
        #expect(files.count >= 4)
        var types: Set<String> = []
        func collect(_ fields: [FieldDefinition]) {
            for field in fields {
                types.insert(field.kind.typeName)
                if case .list(let list) = field.kind { collect(list.fields) }
            }
        }
        for (path, spec) in SpecLoader.check(filesAt: files) {
            #expect(spec.diagnostics.isEmpty, "\(path): \(spec.diagnostics)")
            if let form = spec.form { collect(form.fields) }
        }
        #expect(types == Set(SpecChecker.typeNames))
    }

    @Test func positionsAreOneBasedLineAndColumnOfTheOffendingValue() {
        let result = check("form: Visit\nversion: 1\nendpoint: /v\nfields:\n  count: { type: integer, min: x }\n")
        #expect(result.diagnostics.map(\.description) == ["Spec.yaml:5:32: error: min must be an integer, found 'x'"])
    }

    @Test func aCheckedSpecKeepsFieldsRulesAndChoicesInDeclarationOrder() throws {
        let result = check(
            """
            form: Visit
            version: 2
            endpoint: /sites/{site}/visits
            entity: site
            choices:
              outcome: [done, not_home]
            fields:
              site: { type: text, required: true, max_length: 8 }
              result: { type: choice, options: outcome }
              reason: { type: text, required_if: { result: [not_home] } }
              lines:
                type: list
                min_count: 1
                fields:
                  qty: { type: integer, min: 1 }
            """)
        let form = try #require(result.form)
        #expect(form.version == 2)
        #expect(form.entity == "site")
        #expect(form.endpointFields == ["site"])
        #expect(form.fields.map(\.name) == ["site", "result", "reason", "lines"])
        #expect(form.fields[0].kind == .text(minLength: nil, maxLength: 8, pattern: nil))
        #expect(form.fields[2].requiredIf == [Condition(field: "result", values: ["not_home"])])
        #expect(form.choiceLists.first?.options.map(\.caseName) == ["done", "notHome"])
        guard case .list(let list) = form.fields[3].kind else {
            Issue.record("lines is not a list")
            return
        }
        #expect(list.itemTypeName == "Line")
        #expect(list.count == CountRule(min: 1, max: nil))
    }

    @Test func trueAndFalseAreTheOnlyBooleansAndQuotedYesIsText() throws {
        let ok = check("form: Poll\nversion: 1\nendpoint: /a\nfields:\n  a: { type: choice, options: [\"yes\", \"no\"], required: true }\n")
        #expect(ok.diagnostics.isEmpty)
        let bad = check("form: A\nversion: 1\nendpoint: /a\nfields:\n  a: { type: text, required: True }\n")
        #expect(
            bad.diagnostics.map(\.message) == ["'True' is not a boolean in a FormSync spec (YAML 1.1 reads it as one); write true or false"]
        )
    }

    @Test func byteSizesUseBinaryUnits() throws {
        let result = check(
            "form: A\nversion: 1\nendpoint: /a\nfields:\n  p: { type: photo, max_bytes: 8MB }\n  q: { type: file, max_bytes: 1500 }\n")
        let form = try #require(result.form)
        guard case .file(.photo, let p) = form.fields[0].kind, case .file(.file, let q) = form.fields[1].kind else {
            Issue.record("unexpected kinds")
            return
        }
        #expect(p.maxBytes == Int64(8_388_608))
        #expect(q.maxBytes == 1500)
        #expect(!p.multiple)
    }

    @Test func sameFormNameInTwoSpecsIsAnErrorAtTheSecond() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("formspec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let text = "form: Same\nversion: 1\nendpoint: /a\nfields:\n  a: text\n"
        try text.write(to: dir.appendingPathComponent("A.yaml"), atomically: true, encoding: .utf8)
        try text.write(to: dir.appendingPathComponent("B.yaml"), atomically: true, encoding: .utf8)
        let results = SpecLoader.check(filesAt: SpecLoader.specFiles(in: [dir.path]))
        #expect(results[0].spec.diagnostics.isEmpty)
        #expect(
            results[1].spec.diagnostics.map(\.description) == [
                "\(dir.path)/B.yaml:1:7: error: form 'Same' is already declared in \(dir.path)/A.yaml"
            ])
    }

    @Test func caseConversionFollowsSwiftConventions() {
        #expect(Naming.lowerCamel("due_date") == "dueDate")
        #expect(Naming.lowerCamel("dueDate") == "dueDate")
        #expect(Naming.upperCamel("outcome_list") == "OutcomeList")
        #expect(Naming.itemTypeName(forList: "lines") == "Line")
        #expect(Naming.itemTypeName(forList: "address") == "AddressItem")
        #expect(Naming.escaped("default") == "`default`")
    }

    @Test func anUnreadableFileIsADiagnosticNotACrash() {
        let result = SpecLoader.check(fileAt: "/nonexistent/Spec.yaml")
        #expect(result.diagnostics.map(\.description) == ["/nonexistent/Spec.yaml:1:1: error: cannot read the file"])
    }

    /// Issue 44, defect 12: a spec file was read whole whatever its size (a 2 GiB `.yaml` took
    /// 8 GiB of memory), and a FIFO named like a spec hung the generator.
    @Test func aSpecFileOverTheLimitOrNotARegularFileIsADiagnosticAndIsNotRead() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("spec-bound-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let huge = folder.appendingPathComponent("Huge.yaml")
        #expect(FileManager.default.createFile(atPath: huge.path, contents: Data("form: Huge\n".utf8)))
        let handle = try FileHandle(forWritingTo: huge)
        try handle.truncate(atOffset: UInt64(SpecLoader.maxSpecBytes) * 512)  // 2 GiB, sparse: nothing to read but zeros
        try handle.close()
        #expect(
            SpecLoader.check(fileAt: huge.path).diagnostics.map(\.description) == [
                "\(huge.path):1:1: error: the file is \(SpecLoader.maxSpecBytes * 512) bytes; a spec may be at most \(SpecLoader.maxSpecBytes)"
            ])

        let fifo = folder.appendingPathComponent("Pipe.yaml")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        #expect(
            SpecLoader.check(fileAt: fifo.path).diagnostics.map(\.description) == [
                "\(fifo.path):1:1: error: not a regular file: a spec is a YAML file"
            ])
        #expect(SpecLoader.check(fileAt: folder.path).diagnostics.first?.message == "not a regular file: a spec is a YAML file")
    }

    @Test func mediaTypesAndDecimalLiteralsAreRecognisedExactly() {
        for ok in ["image/jpeg", "image/*", "application/vnd.ms-excel", "audio/mp4a-latm", "video/3gpp"] {
            #expect(SpecChecker.isMediaType(ok), "\(ok)")
        }
        for bad in ["jpeg", "Image/jpeg", "image/", "/jpeg", "image/jp eg", "image/*/x", "*/*", "image/.x"] {
            #expect(!SpecChecker.isMediaType(bad), "\(bad)")
        }
        for ok in ["0", "-0", "12", "12.5", "-40.0", "0.001"] { #expect(SpecChecker.isDecimalLiteral(ok), "\(ok)") }
        for bad in ["", "-", "01", "1.", ".5", "1.2.3", "1e3", "+1", "0x1", "1_0"] { #expect(!SpecChecker.isDecimalLiteral(bad), "\(bad)") }
    }

    @Test func aPatternWrittenWithRedundantAnchorsIsAcceptedAndMeansTheSame() throws {
        let text = "form: Anchored\nversion: 1\nendpoint: /a\nfields:\n  code: { type: text, pattern: \"^[A-Z]{3}-[0-9]+$\" }\n"
        let anchored = SpecLoader.check(text: text, path: "Anchored.yaml")
        #expect(anchored.diagnostics.filter { $0.severity == .error }.isEmpty, "\(anchored.diagnostics)")
        let bare = SpecLoader.check(
            text: text.replacingOccurrences(of: "^[A-Z]{3}-[0-9]+$", with: "[A-Z]{3}-[0-9]+"), path: "Anchored.yaml")
        let field = try #require(anchored.form?.fields.first)
        #expect(field.kind == bare.form?.fields.first?.kind)
    }
}

/// Issue 44, defect 6: a large pattern is accepted only with a max_length that keeps a value's
/// check within `Pattern.workBudget`.
struct PatternBoundCheckTests {
    static func spec(_ field: String) -> String {
        "form: Code\nversion: 1\nendpoint: /codes\nfields:\n  code: \(field)\n"
    }

    static let costly = String(repeating: "[0-9]{0,999}", count: 9) + "x"

    @Test func aLargePatternNeedsAMaxLengthThatBoundsItsWork() throws {
        let unbounded = SpecLoader.check(text: Self.spec("{ type: text, pattern: '\(Self.costly)' }"), path: "Code.yaml")
        let message = try #require(unbounded.diagnostics.first?.description)
        #expect(message.contains("give the field a max_length of at most"), "\(message)")
        #expect(unbounded.form == nil)
        let tooLong = SpecLoader.check(text: Self.spec("{ type: text, max_length: 5000, pattern: '\(Self.costly)' }"), path: "Code.yaml")
        #expect(tooLong.form == nil)
        let bounded = SpecLoader.check(text: Self.spec("{ type: text, max_length: 50, pattern: '\(Self.costly)' }"), path: "Code.yaml")
        #expect(bounded.diagnostics.isEmpty, "\(bounded.diagnostics)")
        let small = SpecLoader.check(text: Self.spec("{ type: text, pattern: '[A-Z]{2}[0-9]{4}' }"), path: "Code.yaml")
        #expect(small.diagnostics.isEmpty, "a small pattern needs no max_length")
    }
}
