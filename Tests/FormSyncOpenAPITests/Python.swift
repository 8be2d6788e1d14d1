import Foundation
import Synchronization
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

    /// Runs `python3 arguments…` with `input` on its standard input. Blocks: call it off the
    /// cooperative pool.
    static func run(_ arguments: [String], input: Data = Data()) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(input)
        try stdin.fileHandleForWriting.close()
        // Both streams are read at once, so that neither fills its pipe while the other is read.
        let errors = Mutex<Data>(Data())
        let readErrors = DispatchGroup()
        readErrors.enter()
        DispatchQueue.global().async {
            errors.withLock { $0 = stderr.fileHandleForReading.readDataToEndOfFile() }
            readErrors.leave()
        }
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        readErrors.wait()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, output: output, errors: String(decoding: errors.withLock { $0 }, as: UTF8.self))
    }

    /// The JSON a Python program prints, or nil (recorded as an issue, with how to install what
    /// is missing) when it fails.
    static func json(_ program: String, input: Data) throws -> Any? {
        let run = try run(["-c", program], input: input)
        guard run.status == 0 else {
            Issue.record("python3 failed (\(run.status)): \(run.errors.suffix(2000)) — \(installHint)")
            return nil
        }
        return try JSONSerialization.jsonObject(with: run.output, options: [.fragmentsAllowed])
    }
}
