import FormSyncClient
import FormSyncCommandLine
import FormSyncProtocol
import Foundation

/// `formsync export`'s work: the submissions feed read from where the last run stopped into an
/// append-only journal (`submissions.ndjson`, one event per line, synced before its cursor is
/// kept in `.formsync-export.json`), then every form's CSV tables written again from the whole
/// journal (`SubmissionTables`). A run killed at any moment resumes from the last cursor kept:
/// the journal is cut back to the length that cursor covers, so no event is written twice.
struct SubmissionExport {
    /// Where the last run stopped: the server and workspace it read, the cursor, and how many
    /// bytes of the journal that cursor covers.
    struct State: Codable, Equatable {
        var server: String
        var workspace: String
        var cursor: String?
        var journalBytes: Int64
    }

    /// What a run did.
    struct Summary: Equatable {
        var events = 0
        var pages = 0
        var tables: [String] = []
        var documents = 0
    }

    enum Failure: Error, CustomStringConvertible {
        case refused(String)
        case otherSource(String)

        var description: String {
            switch self {
            case .refused(let why): return why
            case .otherSource(let what): return what
            }
        }
    }

    static let journalName = "submissions.ndjson"
    static let stateName = ".formsync-export.json"

    let transport: HTTPTransport
    let server: String
    let workspace: String
    let directory: URL
    /// The forms whose tables are written (nil: every form).
    let forms: Set<String>?

    func run(progress: (String) -> Void) async throws -> Summary {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let journalPath = directory.appendingPathComponent(Self.journalName).path
        let statePath = directory.appendingPathComponent(Self.stateName).path
        var state = State(server: server, workspace: workspace, cursor: nil, journalBytes: 0)
        if let data = FileManager.default.contents(atPath: statePath) {
            guard let kept = try? JSONDecoder().decode(State.self, from: data) else {
                throw Failure.otherSource("\(statePath) is not an export's state: remove it (and the journal) to start over")
            }
            guard kept.server == server, kept.workspace == workspace else {
                throw Failure.otherSource(
                    "\(directory.path) holds an export of \(kept.server) (\(kept.workspace)); export to another folder")
            }
            state = kept
        }
        if !FileManager.default.fileExists(atPath: journalPath), !FileManager.default.createFile(atPath: journalPath, contents: nil) {
            throw Failure.otherSource("cannot create \(journalPath)")
        }
        guard let journal = FileHandle(forUpdatingAtPath: journalPath) else { throw Failure.otherSource("cannot open \(journalPath)") }
        defer { try? journal.close() }
        // What the kept cursor covers, and nothing after it (a run killed between its write and
        // its state); a journal shorter than that lost its tail: read everything again.
        let length = Int64(try journal.seekToEnd())
        if length < state.journalBytes { (state.cursor, state.journalBytes) = (nil, 0) }
        try journal.truncate(atOffset: UInt64(state.journalBytes))
        try journal.seek(toOffset: UInt64(state.journalBytes))

        var summary = Summary()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        while true {
            let reply = await transport.submissions(after: state.cursor, limit: SubmissionsPage.maxLimit)
            let page: SubmissionsPage
            switch reply {
            case .done(let value): page = value
            case .refused(let code, let detail): throw Failure.refused("the server refused: \(code?.rawValue ?? "?"): \(detail)")
            case .unreachable(let reason): throw Failure.refused("no FormSync server answered: \(reason)")
            }
            if page.more && (page.submissions.isEmpty || page.cursor == state.cursor) {
                throw Failure.refused("the feed says there is more but does not move past \(state.cursor ?? "the start")")
            }
            var lines = Data()
            for event in page.submissions {
                lines.append(try encoder.encode(event))
                lines.append(0x0A)
            }
            try journal.write(contentsOf: lines)
            try journal.synchronize()
            state.journalBytes += Int64(lines.count)
            state.cursor = page.cursor
            try DerivedFile.replace(statePath, with: try encoder.encode(state))
            summary.events += page.submissions.count
            summary.pages += 1
            progress("exported \(summary.events) event(s) in \(summary.pages) page(s), cursor \(page.cursor)")
            if !page.more { break }
        }

        // Every table again, from the whole journal.
        try journal.seek(toOffset: 0)
        let data = try journal.readToEnd() ?? Data()
        let decoder = JSONDecoder()
        var events: [SubmissionEvent] = []
        for line in data.split(separator: 0x0A) where !line.isEmpty {
            events.append(try decoder.decode(SubmissionEvent.self, from: Data(line)))
        }
        let tables = SubmissionTables(events: events, forms: forms)
        for table in tables.all {
            let name = table.name.map { $0.isLetter || $0.isNumber || "-_".contains($0) ? $0 : "_" }
            try DerivedFile.replace(directory.appendingPathComponent(String(name) + ".csv").path, with: SubmissionTables.csv(table))
            summary.tables.append(String(name) + ".csv")
            if !table.name.contains("-") { summary.documents += table.rows.count }
        }
        return summary
    }
}
