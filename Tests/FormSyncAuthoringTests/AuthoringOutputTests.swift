import FormSpec
import Foundation
import Testing

@testable import FormSyncAuthoring
@testable import FormSyncCodegen

/// What authors get beside the generated code: the spec language's schema as checked in, and a
/// preview script that no spec text escapes from.
struct AuthoringOutputTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theSpecLanguageSchemaCheckedInMatchesTheGenerator() throws {
        let checkedIn = try String(contentsOf: Self.root.appendingPathComponent("FormSpecs/formspec.schema.json"), encoding: .utf8)
        #expect(checkedIn == SpecLanguageSchema.schema().rendered())
    }

    /// Issue 44, defect 4: a spec file name with a line break ended the script's header comment
    /// and the rest ran in `formsync preview`.
    @Test func aSpecFileNameWithALineBreakStaysInsideTheHeaderOfThePreviewScript() throws {
        for name in ["Visit\nlet injected = 1\n.yaml", "Visit\rlet injected = 1\r.yaml", "Visit\u{2028}alert(injected)\u{2029}.yaml"] {
            let result = SpecLoader.check(text: "form: Visit\nversion: 1\nendpoint: /v\nfields:\n  note: text\n", path: name)
            let form = try #require(result.form, "\(result.diagnostics)")
            let script = PreviewScriptGenerator.script(for: form)
            #expect(script.contains("injected"))
            let escaped = CommentText.lines(script).filter {
                $0.contains("injected") && !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//")
            }
            #expect(escaped.isEmpty, "\(script.prefix(300))")
        }
    }
}
