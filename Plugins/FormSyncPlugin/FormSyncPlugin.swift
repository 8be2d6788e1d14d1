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

    /// One command for the catalog, one per spec; shared by SwiftPM and Xcode.
    static func commands(generator: URL, workDirectory: URL, specs files: [URL]) throws -> [Command] {
        let specs = files
            .filter { $0.pathExtension == "yaml" || $0.pathExtension == "yml" }
            .sorted { $0.path < $1.path }
        let catalog = workDirectory.appending(path: "FormCatalog.swift")
        let catalogCommand: Command = .buildCommand(
            displayName: "Generating FormCatalog.swift from \(specs.count) specs",
            executable: generator,
            arguments: ["--catalog", catalog.path] + specs.map(\.path),
            inputFiles: specs,
            outputFiles: [catalog]
        )
        return [catalogCommand] + specs.map { spec in
            let base = spec.deletingPathExtension().lastPathComponent
            let output = workDirectory.appending(path: base + ".swift")
            return .buildCommand(
                displayName: "Generating \(base).swift from \(spec.lastPathComponent)",
                executable: generator,
                arguments: [spec.path, "--swift", output.path],
                inputFiles: [spec],
                outputFiles: [output]
            )
        }
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
