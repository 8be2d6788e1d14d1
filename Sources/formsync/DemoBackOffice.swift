import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import Foundation

/// The back office's half of `formsync demo`: a webhook receiver the demo runs, registered in
/// the morning, which gets every document event of the day signed and once; a delivery the
/// supervisor sends back in the evening, which the courier's phone reopens, fixes and sends as
/// the document's next version; and the day exported as CSV through the submissions feed.
struct DemoBackOffice {
    /// The receiver: every delivery, and whether its signature checked.
    let receiver: WebhookReceiver
    let secret: String
    let token: String
    /// The document sent back, and what became of it.
    var sentBack: String?
    var fixedVersion = 0
    var historyAuthors: [String] = []
    /// The export of the day: tables written, documents in them.
    var exportTables: [String] = []
    var exportDocuments = 0
    /// Every document event of the day, as the export read them.
    var exportEvents = 0

    /// Each event delivered once, each signature valid, each document's events in order.
    func deliveries(expected: Int) -> (unique: Int, duplicates: Int, badSignatures: Int, outOfOrder: Int, expected: Int) {
        let received = receiver.received
        let now = Int64(Date().timeIntervalSince1970)
        let bad = received.filter {
            !WebhookSignature.verify(header: $0.signature, body: $0.body, secret: secret, now: now, tolerance: 3600)
        }.count
        var firstSeen: [Int64] = []
        for delivery in received where !firstSeen.contains(delivery.eventID ?? -1) { firstSeen.append(delivery.eventID ?? -1) }
        var outOfOrder = 0
        for document in Set(received.compactMap(\.documentID)) {
            let ids = firstSeen.filter { id in received.first { $0.eventID == id }?.documentID == document }
            if ids != ids.sorted() { outOfOrder += 1 }
        }
        return (firstSeen.count, received.count - firstSeen.count, bad, outOfOrder, expected)
    }
}

extension FieldDay {
    /// Morning: a receiver of the day's events, registered with a back-office token.
    func openBackOffice(_ server: SyncServer) throws -> DemoBackOffice {
        let receiver = try WebhookReceiver()
        let token = try server.issueAccessToken(principal: "supervisor", workspaces: ["demo"], role: .backOffice)
        let made = server.handle(
            HTTPRequestBuilder.json(
                "POST", "/webhooks", token: token, workspace: "demo",
                body: try JSONEncoder().encode(WebhookCreate(url: "http://127.0.0.1:\(receiver.port)/erp"))))
        guard made?.status == 201, let webhook = try? JSONDecoder().decode(Webhook.self, from: made?.body ?? Data()),
            let secret = webhook.secret
        else { throw DemoError.backOffice("the webhook could not be registered") }
        server.webhooks.start(interval: 0.25)
        return DemoBackOffice(receiver: receiver, secret: secret, token: token)
    }

    /// Evening: the supervisor sends worker 1's first delivery back; the courier's phone pulls,
    /// finds it reopened, fixes the recipient's name and sends it again.
    mutating func sendBackAndFix(_ server: SyncServer, _ office: inout DemoBackOffice) async throws {
        guard let entry = captured.first(where: { $0.worker == 1 && $0.form == "DeliveryConfirmation" }),
            let held = server.document(entry.documentID)
        else { return }
        let asked = ReviewRequest(
            verdict: .hasIssues, version: held.version, comment: "The recipient's surname is missing",
            issues: [Review.Issue(pointer: "#/recipient_name", detail: "Write the name as on the signature")])
        let reviewed = server.handle(
            HTTPRequestBuilder.json(
                "POST", "/documents/\(entry.documentID)/reviews", token: office.token, workspace: "demo",
                body: try JSONEncoder().encode(asked)))
        guard reviewed?.status == 201 else { throw DemoError.backOffice("the review was refused (HTTP \(reviewed?.status ?? 0))") }
        note("the supervisor sent \(entry.marker) back: the recipient's surname is missing")
        office.sentBack = entry.documentID

        let credentials = try await DeviceCredentials(vault: FileCredentialVault(path: vault(1).path), device: Self.report(1))
        let transport = HTTPTransport(workspace: "demo", baseURL: server.baseURL, timeout: .seconds(5)) {
            await credentials.accessToken()
        }
        let outbox = try Outbox(
            path: database(1).path, forms: FormCatalog.forms, records: FormCatalog.records, transport: transport,
            refreshAuthentication: { await credentials.refresh() })
        _ = try await outbox.pull()
        guard
            let item = try await outbox.items(in: [.rejected]).first(where: { $0.documentID == entry.documentID }),
            var fixed = try item.decodedPayload(as: DeliveryConfirmation.self)
        else { throw DemoError.backOffice("the courier's phone did not reopen \(entry.marker)") }
        fixed.recipientName = "\(entry.marker) Silva"
        try await outbox.resubmit(item.id, with: fixed)
        _ = await outbox.flush()
        let after = server.document(entry.documentID)
        office.fixedVersion = after?.version ?? 0
        note("courier-1's phone reopened \(entry.marker), fixed it and sent it: version \(office.fixedVersion) on the server")
        let history = server.handle(
            HTTPRequestBuilder.json("GET", "/documents/\(entry.documentID)/history", token: office.token, workspace: "demo", body: nil))
        let entries = (try? JSONDecoder().decode(VersionHistory.self, from: history?.body ?? Data()))?.entries ?? []
        office.historyAuthors = entries.map { "\($0.event.rawValue) by \($0.author.principal ?? "the server")" }
    }

    /// The day's submissions out through the feed, as `formsync export` writes them, beside the
    /// server's own documents (what `DemoProcessTests` reads the tables back against).
    func exportDay(_ server: SyncServer, _ office: inout DemoBackOffice) async throws {
        let directory = folder.appendingPathComponent("export")
        let token = office.token
        let export = SubmissionExport(
            transport: HTTPTransport(workspace: "demo", baseURL: server.baseURL, timeout: .seconds(30)) { token },
            server: server.baseURL.absoluteString, workspace: "demo", directory: directory, forms: nil)
        let summary = try await export.run { _ in }
        office.exportTables = summary.tables
        office.exportDocuments = summary.documents
        office.exportEvents = summary.events
        let documents = server.documents().map { document -> [String: Any] in
            [
                "form": document.form, "document_id": document.documentID, "version": document.version,
                "record": (try? JSONSerialization.jsonObject(with: document.payload)) ?? [:],
            ]
        }
        try JSONSerialization.data(withJSONObject: documents).write(to: folder.appendingPathComponent("server-documents.json"))
    }
}

/// A request to the in-process server, as the back office's tools send it.
enum HTTPRequestBuilder {
    static func json(_ method: String, _ path: String, token: String, workspace: String, body: Data?) -> HTTPRequest {
        var headers = ["authorization": "Bearer \(token)", ProtocolHeader.workspace.lowercased(): workspace]
        if body != nil { headers["content-type"] = "application/json" }
        return HTTPRequest(method: method, path: path, query: nil, headers: headers, body: body ?? Data())
    }
}
