import FormSyncTesting
import Foundation

/// Runs a process to its end on threads of its own, so that waiting for it never occupies one
/// of the few threads of Swift's concurrency pool (two on a two-core machine), which the other
/// tests running in parallel need. Started with `posix_spawn` (`ChildProcess`), not
/// Foundation's `Process`, which can crash a process with many descriptors open.
enum ProcessRunner {
    struct Result: Sendable {
        /// The exit status, or 128 + the signal that ended it.
        var status: Int32
        var output: String
        var errors: String
    }

    static func run(
        _ executable: URL, _ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:]
    ) async throws
        -> Result
    {
        let run = try await ChildProcess.run(executable.path, arguments, environment: environment, directory: directory?.path)
        let status: Int32
        switch run.termination {
        case .exit(let code): status = code
        case .signal(let signal): status = 128 + signal
        }
        return Result(status: status, output: run.output, errors: run.errors)
    }
}
