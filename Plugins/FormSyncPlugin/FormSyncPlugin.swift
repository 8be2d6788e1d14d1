import Foundation
import PackagePlugin

/// Compiles every `*.yaml` form spec in a target's directory into Swift with `formsync-gen`, one
/// output file per spec. A spec file added to the directory is part of the target, so the next
/// `swift build` re-plans and picks it up with no change to Package.swift.
@main
struct FormSyncPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        return try Self.commands(
            generator: try context.tool(named: "formsync-gen").url, workDirectory: context.pluginWorkDirectoryURL,
            specs: target.sourceFiles.map(\.url))
    }

    /// The build commands of a target of specs; shared by SwiftPM and Xcode.
    static func commands(generator: URL, workDirectory: URL, specs files: [URL]) throws -> [Command] {
        let specs =
            files
            .filter { $0.pathExtension == "yaml" || $0.pathExtension == "yml" }
            .sorted { $0.path < $1.path }
        // One command for the whole target: one process checks every spec (and the checks
        // across specs) and writes each spec's Swift and the catalog, rewriting only files
        // whose contents changed, so an edit recompiles only what it changed.
        let outputs =
            [workDirectory.appending(path: "FormCatalog.swift")]
            + specs.map { workDirectory.appending(path: $0.deletingPathExtension().lastPathComponent + ".swift") }
        return [
            .buildCommand(
                displayName: "Generating Swift from \(specs.count) specs",
                executable: generator,
                arguments: ["--target", workDirectory.path] + specs.map(\.path),
                inputFiles: specs,
                outputFiles: outputs
            )
        ]
    }
}

#if canImport(XcodeProjectPlugin)
    import XcodeProjectPlugin

    extension FormSyncPlugin: XcodeBuildToolPlugin {
        /// The same commands for an Xcode project's target: its `*.yaml` files are the specs.
        func createBuildCommands(context: XcodePluginContext, target: XcodeTarget) throws -> [Command] {
            try Self.commands(
                generator: try context.tool(named: "formsync-gen").url, workDirectory: context.pluginWorkDirectoryURL,
                specs: target.inputFiles.map(\.url))
        }
    }
#endif
