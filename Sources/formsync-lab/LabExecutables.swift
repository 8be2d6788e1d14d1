import FormSyncCommandLine
import Foundation

/// The executables a harness or benchmark starts as its children.
enum LabExecutables {
    /// This lab executable, which a harness starts again as its child (`role`).
    static func own(toRun role: String) throws -> String {
        guard let executable = Bundle.main.executablePath else {
            throw UsageError("cannot find the formsync-lab executable to run \(role)")
        }
        return executable
    }

    /// The `formsync` tool built beside this lab executable: the server nodes run it.
    static func formsync() throws -> String {
        let lab = try own(toRun: "the server nodes")
        let tool = URL(fileURLWithPath: lab).deletingLastPathComponent().appendingPathComponent("formsync").path
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            throw UsageError("the server nodes run formsync, which is not built beside \(lab): swift build --product formsync")
        }
        return tool
    }
}
