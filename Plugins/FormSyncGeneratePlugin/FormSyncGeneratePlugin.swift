import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory generate-formsync [--target T] [--output DIR] [--check]`:
/// runs `formsync generate` (built into `formsync-gen`, the plugin's small generator) on the spec folder of every target that uses the FormSync build
/// plugin (or only `--target T`), writing the checked-in copy into `--output` (default
/// `Generated`, beside the package manifest) and recording new shapes in the folder's
/// `formspecs.lock`. `--check` writes nothing and fails when the copy or the lock is stale.
@main
struct FormSyncGeneratePlugin: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        var extractor = ArgumentExtractor(arguments)
        let only = extractor.extractOption(named: "target")
        let output = extractor.extractOption(named: "output").first ?? "Generated"
        let check = extractor.extractFlag(named: "check") > 0
        let tool = try context.tool(named: "formsync-gen")
        let targets = context.package.targets.compactMap { $0 as? SourceModuleTarget }.filter { target in
            (only.isEmpty || only.contains(target.name))
                && target.sourceFiles.contains { $0.url.pathExtension == "yaml" || $0.url.pathExtension == "yml" }
        }
        guard !targets.isEmpty else {
            Diagnostics.error("no target holds *.yaml specs\(only.isEmpty ? "" : " among \(only.joined(separator: ", "))")")
            return
        }
        for target in targets {
            let destination = targets.count == 1 ? output : output + "/" + target.name
            let outputURL = context.package.directoryURL.appending(path: destination)
            let specs = target.sourceFiles.map(\.url).filter { $0.pathExtension == "yaml" || $0.pathExtension == "yml" }
            let folders = Set(specs.map { $0.deletingLastPathComponent().path }).sorted()
            var arguments = ["generate"] + folders + ["--output", outputURL.path]
            if check { arguments.append("--check") }
            let process = Process()
            process.executableURL = tool.url
            process.arguments = arguments
            try process.run()
            process.waitUntilExit()
            if process.terminationStatus != 0 {
                Diagnostics.error("formsync generate failed for target \(target.name) (exit \(process.terminationStatus))")
            }
        }
    }
}
