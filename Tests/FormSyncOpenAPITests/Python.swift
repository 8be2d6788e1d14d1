import FormSyncTesting
import Foundation
import Testing

/// CPython, for the readers and validators the description is held to (PyYAML and
/// openapi-spec-validator, from PyPI; `.ci/run` installs them).
enum Python {
    static let installHint = "needs python3 with openapi-spec-validator: pip install openapi-spec-validator (.ci/run installs it)"

    struct Run {
        var status: Int32
        var output: Data
        var errors: String
    }

    /// Runs `python3 arguments…` to its end, off the cooperative pool (`ChildProcess.run`).
    static func run(_ arguments: [String]) async throws -> Run {
        let (termination, output, errors) = try await ChildProcess.run("/usr/bin/env", ["python3"] + arguments)
        let status: Int32 = if case .exit(let code) = termination { code } else { -1 }
        return Run(status: status, output: Data(output.utf8), errors: errors)
    }

    /// The JSON a Python program prints when given `input`'s path as its one argument, or nil
    /// (recorded as an issue, with how to install what is missing) when it fails.
    static func json(_ program: String, input: Data) async throws -> Any? {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("python-input-\(UUID().uuidString)")
        try input.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await run(["-c", program, file.path])
        guard run.status == 0 else {
            Issue.record("python3 failed (\(run.status)): \(run.errors.suffix(2000)) — \(installHint)")
            return nil
        }
        return try JSONSerialization.jsonObject(with: run.output, options: [.fragmentsAllowed])
    }
}
