import FieldForms
import FormSyncClient
import FormSyncModel
import Foundation

/// `formsync outbox inspect PATH`: opens an outbox database (never sending anything) and shows
/// what a support engineer needs: counts, items by state, one item with its attempt history,
/// payload and field errors, or a support bundle of all of it. Tokens are never stored in an
/// outbox, and file contents are left out (only their size, type and digest are shown). A file
/// that is not an outbox is refused with the reason, and left untouched.
enum OutboxCommand {
    static let help = """
        usage: formsync outbox inspect PATH [--workspace W] [--state S] [--item ID] [--bundle FILE] [--create]

        Opens the outbox database at PATH without sending anything and prints JSON on standard
        output:
          (default)     {"workspace", "counts": {state: n}, "needs_attention": [...], "items": [...]}
                        every item, newest first (at most 500), with its state and last error
          --state S     only the items in state S (saved_on_device, waiting_for_network,
                        sending, sent, confirmed, rejected, conflict, exhausted, blocked)
          --item ID     one item: its payload, base and server versions, field errors, conflicts
                        and attempt history
          --bundle FILE writes a support bundle (every item with its history, the record and
                        pull counts) to FILE instead; file contents and tokens are never included
        --workspace   the workspace to look at (default: default)
        --create      create an empty outbox when PATH does not exist (otherwise that is an error)
        Exit status: 0 printed, 1 the file cannot be opened as an outbox or has no such item,
        2 a usage mistake.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--workspace", "--state", "--item", "--bundle"], flags: ["--help", "-h", "--create"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        guard args.positionals.first == "inspect", args.positionals.count == 2 else { throw UsageError("expected: outbox inspect PATH") }
        let path = args.positionals[1]
        let workspace = args.values["--workspace"] ?? "default"
        var state: SyncState?
        if let name = args.values["--state"] {
            guard let parsed = SyncState(rawValue: name) else {
                throw UsageError("--state takes one of \(SyncState.allCases.map(\.rawValue).joined(separator: ", ")), not '\(name)'")
            }
            state = parsed
        }
        if !args.flags.contains("--create") && !FileManager.default.fileExists(atPath: path) {
            throw UsageError("\(path): \(String(cString: strerror(ENOENT)))")
        }
        let outbox: Outbox
        do {
            outbox = try Outbox(path: path, forms: FormCatalog.forms, records: FormCatalog.records, transport: OfflineTransport(workspace: workspace))
        } catch {
            printError("formsync outbox: \(error)")
            return 1
        }
        if let text = args.values["--item"] {
            guard let id = Int64(text) else { throw UsageError("--item takes an item id, not '\(text)'") }
            guard let item = try await outbox.item(id) else {
                printError("formsync outbox: no item \(id) in workspace \(workspace)")
                return 1
            }
            print(try render(try await detail(item, outbox)))
            return 0
        }
        let all = try await outbox.items(in: Set(state.map { [$0] } ?? SyncState.allCases)).sorted { $0.id > $1.id }
        if let bundle = args.values["--bundle"] {
            var items: [[String: Any]] = []
            for item in all { items.append(try await detail(item, outbox)) }
            let object: [String: Any] = [
                "formsync_bundle": 1, "workspace": workspace, "created_at": ISO8601DateFormatter().string(from: Date()),
                "counts": Dictionary(uniqueKeysWithValues: await outbox.stateCounts().map { ($0.key.rawValue, $0.value) }),
                "records_held": (try? await outbox.storedRecordCount()) ?? 0, "items": items,
                "note": "no file contents and no tokens: an outbox never stores tokens, and files are described, not copied",
            ]
            try Data(try render(object).utf8).write(to: URL(fileURLWithPath: bundle), options: .atomic)
            printError("support bundle with \(items.count) items written to \(bundle)")
            return 0
        }
        let object: [String: Any] = [
            "workspace": workspace,
            "counts": Dictionary(uniqueKeysWithValues: await outbox.stateCounts().map { ($0.key.rawValue, $0.value) }),
            "needs_attention": try await outbox.parkedItems().map(summary),
            "items": Array(all.prefix(500)).map(summary),
        ]
        print(try render(object))
        return 0
    }

    static func summary(_ item: OutboxItem) -> [String: Any] {
        ["id": item.id, "kind": item.kind.rawValue, "form": item.form ?? "file", "state": item.state.rawValue, "attempts": item.attempts,
         "last_error": item.lastError ?? "", "document_id": item.documentID, "lane": item.lane]
    }

    /// One item in full, for a person: payload and versions as JSON, field errors, conflicts,
    /// attempt history.
    static func detail(_ item: OutboxItem, _ outbox: Outbox) async throws -> [String: Any] {
        var object = summary(item)
        object["attempt_id"] = item.attemptID
        object["next_attempt_at"] = item.nextAttemptAt
        if let version = item.formVersion { object["form_version"] = version }
        if let placeholder = item.producesPlaceholder { object["produces_placeholder"] = placeholder }
        if let id = item.serverID { object["server_id"] = id }
        if let version = item.serverVersion { object["server_version"] = version }
        for (key, data) in [("payload", item.payload), ("base_payload", item.basePayload), ("server_payload", item.serverPayload)] {
            if let data, let value = try? JSONSerialization.jsonObject(with: data) { object[key] = value }
        }
        object["field_errors"] = item.fieldErrors.map { ["pointer": $0.pointer, "code": $0.code, "detail": $0.detail] }
        object["conflicts"] = item.conflicts.map { ["pointer": $0.pointer, "reason": $0.reason] }
        object["history"] = try await outbox.history(of: item.id).map { record -> [String: Any] in
            var entry: [String: Any] = ["at": record.at, "outcome": record.outcome, "milliseconds": record.milliseconds]
            if let status = record.status { entry["status"] = status }
            if let reason = record.reason { entry["reason"] = reason }
            return entry
        }
        return object
    }

    static func render(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]), as: UTF8.self)
    }
}
