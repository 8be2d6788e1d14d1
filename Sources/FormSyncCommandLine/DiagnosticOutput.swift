import FormSpec
import Foundation

/// How a command writes diagnostics: `text` (`path:line:column: severity: message`, to standard
/// error, as compilers do), `json` (one document on standard output, for tools) or `github`
/// (workflow commands on standard output, which GitHub Actions turns into annotations). The
/// one-line summary always goes to standard error.
package enum DiagnosticOutput: String, CaseIterable {
    case text, json, github

    /// The `--format` option's value, `text` when absent.
    package static func from(_ args: Arguments) throws -> DiagnosticOutput {
        guard let value = args.values["--format"] else { return .text }
        guard let format = DiagnosticOutput(rawValue: value) else {
            throw UsageError("--format takes text, json or github, not '\(value)'")
        }
        return format
    }

    /// Writes every diagnostic and the summary; returns the exit status (1 when any is an error).
    package func emit(_ diagnostics: [Diagnostic], summary: String) -> Int32 {
        let sorted = diagnostics.sortedForDisplay()
        switch self {
        case .text:
            for diagnostic in sorted { printError(diagnostic.description) }
        case .json:
            let items: [[String: Any]] = sorted.map {
                [
                    "path": $0.path, "line": $0.location.line, "column": $0.location.column, "severity": $0.severity.rawValue,
                    "message": $0.message,
                ]
            }
            let document: [String: Any] = [
                "diagnostics": items, "errors": sorted.filter { $0.severity == .error }.count,
                "warnings": sorted.filter { $0.severity == .warning }.count,
            ]
            let data =
                (try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]))
                ?? Data()
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        case .github:
            for diagnostic in sorted {
                let properties =
                    "file=\(Self.property(diagnostic.path)),line=\(diagnostic.location.line),col=\(diagnostic.location.column),title=formsync"
                printNow("::\(diagnostic.severity.rawValue) \(properties)::\(Self.data(diagnostic.message))")
            }
        }
        printError(summary)
        return sorted.hasErrors ? 1 : 0
    }

    /// Workflow-command escaping of a message (`%`, CR, LF).
    static func data(_ text: String) -> String {
        text.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\r", with: "%0D").replacingOccurrences(
            of: "\n", with: "%0A")
    }

    /// Workflow-command escaping of a property value (also `:` and `,`).
    static func property(_ text: String) -> String {
        data(text).replacingOccurrences(of: ":", with: "%3A").replacingOccurrences(of: ",", with: "%2C")
    }
}
