import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
import Foundation

/// `formsync outbox inspect PATH`: reads an outbox database (never sending anything, never
/// changing it) and shows what a support engineer needs: counts, items by state, one item with
/// its attempt history, payload and field errors, or a support bundle of all of it. Tokens are
/// never stored in an outbox, and file contents are left out (only their size, type and digest
/// are shown). A file that is not an outbox is refused with the reason. `formsync outbox create
/// PATH` makes an empty outbox, as an app's first launch does.
enum OutboxCommand {
    static let help = """
        usage: formsync outbox inspect PATH [--workspace W] [--state S] [--item ID] [--bundle FILE]
               formsync outbox create PATH

        inspect reads the outbox database at PATH and prints JSON on standard output. It changes
        nothing it reads, not even a mode or a timestamp: it reads a private copy of the database
        and its log, so it is safe on an outbox its app has open.
          (default)     {"workspaces", "counts": {state: n}, "needs_attention": [...], "items": [...]}
                        every item, newest first (at most 500), with its workspace, state and
                        last error
          --workspace W only workspace W's items and counts (default: every workspace)
          --state S     only the items in state S (saved_on_device, sending, confirmed,
                        rejected, conflict, exhausted, blocked, sealed; a file has no network state, so
                        queued items show as saved_on_device and leased ones as sending)
          --item ID     one item: its payload, base and server versions, field errors, conflicts
                        and attempt history
          --bundle FILE writes the support bundle a device would send (counts, people, the
                        items that need a person and the newest others, each with its history
                        and payload) to FILE instead; file contents and tokens are never included
        create makes an empty outbox at PATH when there is none (an existing outbox is left as
        it is; a file that is not an outbox is refused).
        Exit status: 0 printed, 1 the file cannot be read as an outbox or has no such item,
        2 a usage mistake.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--workspace", "--state", "--item", "--bundle"], flags: ["--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        guard args.positionals.count == 2, ["inspect", "create"].contains(args.positionals[0]) else {
            throw UsageError("expected: outbox inspect PATH, or outbox create PATH")
        }
        let path = args.positionals[1]
        if args.positionals[0] == "create" {
            do {
                _ = try Outbox(
                    path: path, forms: FormCatalog.forms, records: FormCatalog.records, transport: OfflineTransport(workspace: "default"))
            } catch {
                printError("formsync outbox: \(error)")
                return 1
            }
            print(try render(["outbox": path, "created_or_found": true]))
            return 0
        }
        let workspace = args.values["--workspace"]
        var state: SyncState?
        if let name = args.values["--state"] {
            guard let parsed = SyncState(rawValue: name) else {
                throw UsageError("--state takes one of \(SyncState.allCases.map(\.rawValue).joined(separator: ", ")), not '\(name)'")
            }
            state = parsed
        }
        let outbox: OutboxInspector
        do {
            outbox = try OutboxInspector(path: path)
            if let text = args.values["--item"] {
                guard let id = Int64(text) else { throw UsageError("--item takes an item id, not '\(text)'") }
                guard let item = try outbox.item(ItemID(id)), workspace == nil || item.workspace == workspace else {
                    printError("formsync outbox: no item \(id)\(workspace.map { " in workspace \($0)" } ?? "")")
                    return 1
                }
                print(try render(try detail(item, outbox)))
                return 0
            }
            let all = try outbox.items(workspace: workspace, in: Set(state.map { [$0] } ?? SyncState.allCases)).sorted { $0.id > $1.id }
            let counts = Dictionary(uniqueKeysWithValues: try outbox.stateCounts(workspace: workspace).map { ($0.key.rawValue, $0.value) })
            let workspaces = try workspace.map { [$0] } ?? outbox.workspaces()
            if let bundle = args.values["--bundle"] {
                // The bundle a device sends support (`SupportBundle`), with the payloads: a
                // person holding the file is recovering what it holds. Never a token or file bytes.
                let made = try outbox.supportBundle(includePayloads: true)
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                try encoder.encode(made).write(to: URL(fileURLWithPath: bundle), options: .atomic)
                printError("support bundle with \(made.items.count) items written to \(bundle)")
                return 0
            }
            let parked: Set<SyncState> = [.rejected, .conflict, .exhausted, .blocked]
            var object: [String: Any] = [
                "workspaces": workspaces, "counts": counts,
                "needs_attention": all.filter { parked.contains($0.state) }.sorted { $0.id < $1.id }.map(summary),
                "items": Array(all.prefix(500)).map(summary),
            ]
            let people = try outbox.people()
            if !people.isEmpty {
                object["people"] = people.map { ["principal": $0.principal, "signed_in": $0.signedIn, "current": $0.current] }
            }
            if let revocation = try outbox.revocation() {
                // Sealed work is for a person to recover (`--bundle` writes it whole, payloads included).
                object["revoked"] = ["reason": revocation.reason, "at": ISO8601DateFormatter().string(from: revocation.at)]
                object["sealed"] = all.filter { $0.state == .sealed }.sorted { $0.id < $1.id }.map(summary)
            }
            print(try render(object))
            return 0
        } catch let error as OutboxError {
            printError("formsync outbox: \(error)")
            return 1
        }
    }

    static func summary(_ item: OutboxItem) -> [String: Any] {
        var object: [String: Any] = [
            "id": item.id.rawValue, "workspace": item.workspace, "kind": item.kind.rawValue, "form": item.form ?? "file",
            "state": item.state.rawValue, "attempts": item.attempts,
            "last_error": item.lastError ?? "", "document_id": item.documentID, "lane": item.lane,
        ]
        if let principal = item.principal { object["principal"] = principal }
        return object
    }

    /// One item in full, for a person: payload and versions as JSON, field errors, conflicts,
    /// attempt history.
    static func detail(_ item: OutboxItem, _ outbox: OutboxInspector) throws -> [String: Any] {
        var object = summary(item)
        object["attempt_id"] = item.attemptID
        object["next_attempt_at"] = item.nextAttemptAt.millisecondsSince1970
        if let version = item.formVersion { object["form_version"] = version }
        if let placeholder = item.producesPlaceholder { object["produces_placeholder"] = placeholder }
        if let id = item.serverID { object["server_id"] = id }
        if let version = item.serverVersion { object["server_version"] = version }
        for (key, data) in [("payload", item.payload), ("base_payload", item.basePayload), ("server_payload", item.serverPayload)] {
            if let data, let value = try? JSONSerialization.jsonObject(with: data) { object[key] = value }
        }
        object["field_errors"] = item.fieldErrors.map { ["pointer": $0.pointer, "code": $0.code, "detail": $0.detail] }
        object["conflicts"] = item.conflicts.map { ["pointer": $0.pointer, "reason": $0.reason] }
        let handovers = try outbox.handovers(of: item.id)
        if !handovers.isEmpty {
            object["handovers"] = handovers.map { handover -> [String: Any] in
                var entry: [String: Any] = [
                    "to": handover.to, "by": handover.by, "at": ISO8601DateFormatter().string(from: handover.at),
                ]
                if let from = handover.from { entry["from"] = from }
                return entry
            }
        }
        object["history"] = try outbox.history(of: item.id).map { record -> [String: Any] in
            var entry: [String: Any] = [
                "at": record.at.millisecondsSince1970, "outcome": record.outcome, "milliseconds": record.duration.clampedMilliseconds,
            ]
            if let status = record.status { entry["status"] = status }
            if let reason = record.reason { entry["reason"] = reason }
            return entry
        }
        return object
    }

    static func render(_ object: [String: Any]) throws -> String {
        String(
            decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]),
            as: UTF8.self)
    }
}
