import FormSyncClient
import FormSyncCommandLine
import FormSyncProtocol
import Foundation

/// `formsync export`: a workspace's submissions out of any FormSync server, as CSV and NDJSON,
/// with a back-office token, resumable (docs/Tools.md, "formsync export").
enum ExportCommand {
    static let help = """
        usage: formsync export --server URL --workspace W --out DIR [--form NAME[,NAME…]]

        Reads the server's submissions feed (GET /submissions) with the back-office token in
        the FORMSYNC_TOKEN environment variable, from where the last export into DIR stopped:
          DIR/submissions.ndjson   every event (accepted, edited, file-completed, reviewed), one
                                   JSON object per line, appended; the journal of the export
          DIR/<Form>.csv           one row per document at its latest version: KEY (the
                                   document's id), _id, _version, _submitted_at, _submitted_by,
                                   _device, _updated_at, _updated_by, _review, then its fields
                                   (a group's as group-field, a file's as photo-id, photo-digest…)
          DIR/<Form>-<list>.csv    one row per item of a list field: PARENT_KEY, KEY, its fields
        --form keeps only those forms' tables (the journal keeps every event). Progress goes to
        standard error. Run it again to bring DIR up to date; a run killed midway resumes.
        Exit status: 0 done, 1 the server refused or did not answer, 2 a usage mistake.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(raw, options: ["--server", "--workspace", "--out", "--form"], flags: ["--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        let connection = try BackOfficeConnection(args)
        guard let out = args.values["--out"], !out.isEmpty else { throw UsageError("--out takes the folder to export into") }
        let forms = (args.values["--form"] ?? "").split(separator: ",").map(String.init)
        if let bad = forms.first(where: { !Identifier.isValid($0) }) { throw UsageError("--form takes a form name, not \(bad.prefix(40))") }
        let export = SubmissionExport(
            transport: connection.transport(timeout: .seconds(60)), server: connection.serverText, workspace: connection.workspace,
            directory: URL(fileURLWithPath: out),
            forms: forms.isEmpty ? nil : Set(forms))
        var line = ProgressLine()
        do {
            let summary = try await export.run { line.update($0) }
            line.finish(
                "exported \(summary.events) new event(s); \(summary.documents) document(s) in \(summary.tables.count) table(s) in \(out)")
            return 0
        } catch let failure as SubmissionExport.Failure {
            line.finish("")
            printError("formsync export: \(failure)")
            return 1
        }
    }
}
