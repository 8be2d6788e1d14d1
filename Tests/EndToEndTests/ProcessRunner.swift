import Foundation

/// Runs a process to its end on threads of its own, so that waiting for it never occupies one
/// of the few threads of Swift's concurrency pool (two on a two-core machine), which the other
/// tests running in parallel need.
enum ProcessRunner {
    struct Result: Sendable {
        var status: Int32
        var output: String
        var errors: String
    }

    private final class Collected: @unchecked Sendable {
        var errors = Data()
    }

    static func run(_ executable: URL, _ arguments: [String], in directory: URL? = nil) async throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let collected = Collected()
                let stderrDone = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    collected.errors = err.fileHandleForReading.readDataToEndOfFile()
                    stderrDone.signal()
                }
                let output = out.fileHandleForReading.readDataToEndOfFile()
                stderrDone.wait()
                process.waitUntilExit()
                continuation.resume(returning: Result(
                    status: process.terminationStatus, output: String(decoding: output, as: UTF8.self),
                    errors: String(decoding: collected.errors, as: UTF8.self)))
            }
        }
    }
}
