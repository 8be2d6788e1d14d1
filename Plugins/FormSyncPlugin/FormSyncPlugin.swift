import PackagePlugin

/// Compiles every `*.yaml` form spec in a target's directory into Swift with `formsync-gen`, one
/// output file per spec. A spec file added to the directory is part of the target, so the next
/// `swift build` re-plans and picks it up with no change to Package.swift.
@main
struct FormSyncPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let generator = try context.tool(named: "formsync-gen")
        let specs = target.sourceFiles.map(\.url)
            .filter { $0.pathExtension == "yaml" || $0.pathExtension == "yml" }
            .sorted { $0.path < $1.path }
        let catalog = context.pluginWorkDirectoryURL.appending(path: "FormCatalog.swift")
        let catalogCommand: Command = .buildCommand(
            displayName: "Generating FormCatalog.swift from \(specs.count) specs",
            executable: generator.url,
            arguments: ["--catalog", catalog.path] + specs.map(\.path),
            inputFiles: specs,
            outputFiles: [catalog]
        )
        return [catalogCommand] + specs.map { spec in
            let base = spec.deletingPathExtension().lastPathComponent
            let output = context.pluginWorkDirectoryURL.appending(path: base + ".swift")
            return .buildCommand(
                displayName: "Generating \(base).swift from \(spec.lastPathComponent)",
                executable: generator.url,
                arguments: [spec.path, "--swift", output.path],
                inputFiles: [spec],
                outputFiles: [output]
            )
        }
    }
}
