import FormSyncProtocol
import Foundation

/// A workspace's documents as CSV tables, the way ODK Central and Kobo users read them: one
/// table per form, one row per document at its latest version (`KEY` the document's identity),
/// and one table per list field (`<Form>-<field>`), one row per item, joined to its parent by
/// `PARENT_KEY` (`KEY` is the parent's key and `/<field>[n]`, counted from 1). A group's fields
/// are columns named `group-field`; a file, a money amount or a point is an object whose members
/// are columns (`photo-id`, `total-minor_units`); a multiple choice is its values joined by
/// spaces. Members in name order. Built from the events of the submissions feed, so the same
/// journal gives the same tables.
struct SubmissionTables {
    struct Table: Equatable {
        var name: String
        var columns: [String]
        var rows: [[String: String]]
    }

    /// The metadata columns of a form's table, before its fields.
    static let metadata = ["KEY", "_id", "_version", "_submitted_at", "_submitted_by", "_device", "_updated_at", "_updated_by", "_review"]

    private(set) var tables: [String: Table] = [:]
    private var order: [String] = []

    /// The tables of `events`' documents (of `forms` alone when given), in the order their forms
    /// and documents first appear.
    init(events: [SubmissionEvent], forms: Set<String>? = nil) {
        var first: [String: SubmissionEvent] = [:]
        var latest: [String: SubmissionEvent] = [:]
        var verdict: [String: String] = [:]
        var documents: [String] = []
        for event in events where forms?.contains(event.form) ?? true {
            if event.event == .reviewed {
                verdict[event.documentID] = event.review?.verdict.rawValue
                continue
            }
            guard event.record != nil else { continue }
            if first[event.documentID] == nil {
                first[event.documentID] = event
                documents.append(event.documentID)
            }
            if (latest[event.documentID]?.version ?? 0) <= event.version { latest[event.documentID] = event }
        }
        for documentID in documents {
            guard let head = first[documentID], let current = latest[documentID], let record = current.record else { continue }
            var row = [
                "KEY": documentID, "_id": String(current.id), "_version": String(current.version), "_submitted_at": head.author.at,
                "_submitted_by": head.author.principal ?? "", "_device": head.author.deviceID ?? "", "_updated_at": current.author.at,
                "_updated_by": current.author.principal ?? "", "_review": verdict[documentID] ?? "",
            ]
            add(record, table: current.form, key: documentID, parent: nil, into: &row)
        }
    }

    /// Flattens `record` into `row` of `table`, and its lists into their own tables, without
    /// recursion (a deep payload cannot exhaust the stack).
    private mutating func add(_ record: WireValue, table: String, key: String, parent: String?, into row: inout [String: String]) {
        // Items of list fields found, whose rows are made after this one.
        var pending: [(table: String, field: String, items: [WireValue])] = []
        var columns: [String] = parent == nil ? Self.metadata : ["PARENT_KEY", "KEY"]
        if let parent {
            row["PARENT_KEY"] = parent
            row["KEY"] = key
        }
        var stack: [(prefix: String, value: WireValue)] = [("", record)]
        while let (prefix, value) = stack.popLast() {
            switch value {
            case .object(let members):
                for name in members.keys.sorted().reversed() {
                    stack.append((prefix.isEmpty ? name : prefix + "-" + name, members[name]!))
                }
            case .array(let items) where !items.isEmpty && items.allSatisfy({ if case .object = $0 { return true } else { return false } }):
                pending.append((table + "-" + prefix, prefix, items))
            default:
                columns.append(prefix)
                row[prefix] = Self.cell(value)
            }
        }
        append(row, columns: columns, to: table)
        for (child, field, items) in pending.reversed() {
            for (index, item) in items.enumerated() {
                var itemRow: [String: String] = [:]
                add(item, table: child, key: "\(key)/\(field)[\(index + 1)]", parent: key, into: &itemRow)
            }
        }
    }

    private mutating func append(_ row: [String: String], columns: [String], to name: String) {
        if tables[name] == nil {
            tables[name] = Table(name: name, columns: [], rows: [])
            order.append(name)
        }
        for column in columns where !tables[name]!.columns.contains(column) { tables[name]!.columns.append(column) }
        tables[name]!.rows.append(row)
    }

    /// The tables in the order they first appeared.
    var all: [Table] { order.compactMap { tables[$0] } }

    /// One value as a cell: text as it is, numbers and booleans as JSON writes them, a list of
    /// values joined by spaces, null as nothing.
    static func cell(_ value: WireValue) -> String {
        switch value {
        case .null: return ""
        case .bool(let flag): return flag ? "true" : "false"
        case .integer(let number): return String(number)
        case .number(let number): return number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .string(let text): return text
        case .array(let items): return items.map(cell).joined(separator: " ")
        case .object: return ""
        }
    }

    /// RFC 4180: a field with a comma, a quote or a line break in quotes, its quotes doubled;
    /// lines end with CRLF.
    static func csv(_ table: Table) -> Data {
        var text = table.columns.map(quoted).joined(separator: ",") + "\r\n"
        for row in table.rows {
            text += table.columns.map { quoted(row[$0] ?? "") }.joined(separator: ",") + "\r\n"
        }
        return Data(text.utf8)
    }

    static func quoted(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
