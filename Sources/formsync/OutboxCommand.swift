import FieldForms
import FormSyncClient
import Foundation

/// `formsync outbox inspect PATH`: opens an outbox database (never sending anything) and prints,
/// as JSON on standard output, its counts per state for one workspace and the items that need a
/// person. A file that is not an outbox is refused with the reason, and left untouched.
enum OutboxCommand {
    static let help = """
        usage: formsync outbox inspect PATH [--workspace W] [--create]

        Opens the outbox database at PATH without sending anything and prints a JSON object:
        {"workspace", "counts": {state: n}, "needs_attention": [{id, form, state, last_error}]}.
        --workspace   the workspace to look at (default: default)
        --create      create an empty outbox when PATH does not exist (otherwise that is an error)
        Exit status: 0 printed, 1 the file cannot be opened as an outbox, 2 a usage mistake.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--workspace"], flags: ["--help", "-h", "--create"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        guard args.positionals.first == "inspect", args.positionals.count == 2 else { throw UsageError("expected: outbox inspect PATH") }
        let path = args.positionals[1]
        let workspace = args.values["--workspace"] ?? "default"
        if !args.flags.contains("--create") && !FileManager.default.fileExists(atPath: path) {
            printError("formsync outbox: \(path): \(String(cString: strerror(ENOENT)))")
            return 1
        }
        let outbox: Outbox
        do {
            outbox = try Outbox(path: path, forms: FormCatalog.forms, transport: OfflineTransport(workspace: workspace))
        } catch {
            printError("formsync outbox: \(error)")
            return 1
        }
        let counts = await outbox.stateCounts()
        let parked = try await outbox.parkedItems().map { item -> [String: Any] in
            ["id": item.id, "form": item.form ?? "file", "state": item.state.rawValue, "last_error": item.lastError ?? ""]
        }
        let object: [String: Any] = [
            "workspace": workspace,
            "counts": Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) }),
            "needs_attention": parked,
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
        return 0
    }
}
