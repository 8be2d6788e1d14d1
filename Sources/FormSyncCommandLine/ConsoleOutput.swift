import Foundation

/// Writes a line to standard output at once (unbuffered), for long-running commands whose
/// output is read while they run.
package func printNow(_ message: String) {
    FileHandle.standardOutput.write(Data((message + "\n").utf8))
}

/// Writes a line to standard error: diagnostics and progress, so standard output stays data.
package func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
