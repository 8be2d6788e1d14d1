import FormSyncHTTP
import FormSyncProtocol
import FormSyncServer
import Foundation
import Synchronization

/// The back office's half (docs/PROTOCOL.md, "The back office's half" and "Webhooks"): the
/// submissions feed, histories with their authors, a conflict that names its author, reviews
/// that reach the document's owner, and webhooks, registered, delivered signed and removed.
/// Needs the back office's token and the document the document checks made.
extension Conformance {
    mutating func backOfficeChecks(held: Held?) async {
        let rules = [
            Rules.feedCarriesSubmissions, Rules.historyNamesAuthors, Rules.conflictNamesAuthor, Rules.reviewReachesOwner,
            Rules.reviewStale, Rules.webhookRegistered, Rules.webhookDelivered,
        ]
        guard let backOfficeToken else {
            for rule in rules { notChecked(rule, "give --back-office-token") }
            return
        }
        guard let held else {
            for rule in rules { notChecked(rule, "no document was made to follow") }
            return
        }
        // The feed, from the start, until the document shows (a bounded number of pages).
        var found: SubmissionEvent?
        var cursor: String?
        for _ in 0..<200 {
            let path = "/submissions?limit=500" + (cursor.map { "&cursor=\($0)" } ?? "")
            guard let page = try? JSONDecoder().decode(SubmissionsPage.self, from: await send("GET", path, as: backOfficeToken).data) else {
                break
            }
            found = found ?? page.submissions.first { $0.documentID == held.document && $0.event == .accepted }
            cursor = page.cursor
            if found != nil || !page.more { break }
        }
        let deviceRead = await send("GET", "/submissions?limit=1")
        check(
            Rules.feedCarriesSubmissions,
            found?.record != nil && found?.author.principal?.isEmpty == false && found?.form == held.form.name && deviceRead.status == 403
                && deviceRead.code == .backOfficeOnly,
            "the document's accepted event: \(found.map { "\($0.eventID) by \($0.author.principal ?? "nobody")" } ?? "not found"); a device reading: \(Self.describe(deviceRead))"
        )

        let history = await send("GET", "/documents/\(held.document)/history", as: backOfficeToken)
        let entries = (try? JSONDecoder().decode(VersionHistory.self, from: history.data))?.entries ?? []
        check(
            Rules.historyNamesAuthors,
            entries.first?.event == .accepted && entries.first?.author.principal == found?.author.principal
                && entries.allSatisfy { !$0.author.at.isEmpty },
            "\(Self.describe(history)): \(entries.map { "\($0.event.rawValue) v\($0.version) by \($0.author.principal ?? "-")" })")

        let stale = await submit(held.form, held.object, document: held.document, key: id("stale-author"), ifMatch: "\"999999\"")
        let author = (stale.json?[Acknowledgement.lastChange]).flatMap { try? JSONSerialization.data(withJSONObject: $0) }.flatMap {
            try? JSONDecoder().decode(ChangeAuthor.self, from: $0)
        }
        check(
            Rules.conflictNamesAuthor, stale.status == 412 && author != nil,
            "\(Self.describe(stale)), last_change \(author.map { "\($0)" } ?? "absent")")

        let json = ["Content-Type": "application/json"]
        let asked = ReviewRequest(verdict: .hasIssues, comment: "conformance run \(run): please check", issues: [])
        let reviewed = await send(
            "POST", "/documents/\(held.document)/reviews", headers: json, body: try? JSONEncoder().encode(asked), as: backOfficeToken)
        let review = reviewed.status == 201 ? try? JSONDecoder().decode(Review.self, from: reviewed.data) : nil
        let page = await send("GET", "/changes?limit=1")
        let carried = (page.json?[FeedPage.reviews] as? [[String: Any]] ?? []).compactMap { ($0["id"] as? NSNumber)?.int64Value }
        check(
            Rules.reviewReachesOwner, review != nil && carried.contains(review?.id ?? -1),
            "the review: \(Self.describe(reviewed)); the owner's feed carried \(carried)")
        let staleReview = await send(
            "POST", "/documents/\(held.document)/reviews", headers: json,
            body: try? JSONEncoder().encode(ReviewRequest(verdict: .approved, version: 999_999)), as: backOfficeToken)
        check(Rules.reviewStale, staleReview.status == 412 && staleReview.code == .staleVersion, Self.describe(staleReview))
        await webhookChecks(held, as: backOfficeToken)
    }

    /// Registers a receiver, makes a document, waits (within the run's bounds) for its signed
    /// delivery, and removes the receiver. The delivery is checked only of a server on this
    /// machine (a receiver here may not be reachable from another).
    private mutating func webhookChecks(_ held: Held, as backOfficeToken: String) async {
        let json = ["Content-Type": "application/json"]
        let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(base.host ?? "")
        let receiver = loopback ? try? WebhookReceiver() : nil
        let url = receiver.map { "http://127.0.0.1:\($0.port)/conformance-\(run)" } ?? "https://receiver.invalid/conformance-\(run)"
        let made = await send(
            "POST", "/webhooks", headers: json, body: try? JSONEncoder().encode(WebhookCreate(url: url, events: [.accepted])),
            as: backOfficeToken)
        let webhook = made.status == 201 ? try? JSONDecoder().decode(Webhook.self, from: made.data) : nil
        let listed = await send("GET", "/webhooks", as: backOfficeToken)
        let shown = (try? JSONDecoder().decode(WebhookList.self, from: listed.data))?.webhooks.first { $0.id == webhook?.id }
        let device = await send("GET", "/webhooks")
        guard let webhook, let secret = webhook.secret else {
            check(Rules.webhookRegistered, false, "the registration: \(Self.describe(made))")
            notChecked(Rules.webhookDelivered, "no webhook was registered")
            return
        }
        if let receiver {
            let document = id("webhook")
            let created = await submit(held.form, held.object, document: document, key: id("k-webhook"))
            var arrived: WebhookReceiver.Received?
            // A delivery is the server's to make when it likes: waited for a while, not forever.
            for _ in 0..<100 where created.status == 201 && arrived == nil {
                arrived = receiver.received.first { $0.documentID == document }
                if arrived == nil { try? await Task.sleep(for: .milliseconds(200)) }
            }
            let signed = arrived.map {
                WebhookSignature.verify(
                    header: $0.signature, body: $0.body, secret: secret, now: Int64(Date().timeIntervalSince1970), tolerance: 3600)
            }
            check(
                Rules.webhookDelivered, signed == true && arrived?.eventID != nil,
                arrived == nil ? "no delivery of \(document) within 20 s (\(Self.describe(created)))" : "the signature did not verify")
        } else {
            notChecked(Rules.webhookDelivered, "the server is not on this machine: a receiver here may not be reachable from it")
        }
        let removed = await send("DELETE", "/webhooks/\(webhook.id)", as: backOfficeToken)
        let again = await send("DELETE", "/webhooks/\(webhook.id)", as: backOfficeToken)
        check(
            Rules.webhookRegistered,
            shown != nil && shown?.secret == nil && device.status == 403 && device.code == .backOfficeOnly && removed.status == 200
                && again.status == 404 && again.code == .noSuchWebhook,
            "listed \(shown != nil) (its secret \(shown?.secret == nil ? "withheld" : "shown")); a device: \(Self.describe(device)); removed: \(Self.describe(removed)); again: \(Self.describe(again))"
        )
    }
}

/// A receiver of webhooks on 127.0.0.1 for the conformance run: it takes every delivery (2xx)
/// and keeps it.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var signature: String
        var eventID: Int64?
        var body: Data
        var documentID: String? {
            ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["document_id"] as? String
        }
    }

    private let server: HTTPServer
    private let log: Log
    let port: UInt16

    final class Log: Sendable {
        let entries = Mutex<[Received]>([])
    }

    init() throws {
        let log = Log()
        self.log = log
        server = HTTPServer { request in
            log.entries.withLock {
                if $0.count < 1000 {
                    $0.append(
                        Received(
                            signature: request.header(ProtocolHeader.signature) ?? "",
                            eventID: request.header(ProtocolHeader.eventID).flatMap { Int64($0) }, body: request.body))
                }
            }
            return .json(200, ["taken": true])
        }
        port = try server.start(host: "127.0.0.1", port: 0)
    }

    deinit { server.stop() }

    var received: [Received] { log.entries.withLock { $0 } }
}
