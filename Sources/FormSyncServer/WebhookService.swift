import FormSyncHTTP
import FormSyncProtocol
import Foundation

/// The back office's webhooks (docs/PROTOCOL.md, "Webhooks"): register a receiver (its signing
/// secret shown once), list them, rotate a secret, remove one, read a receiver's deliveries and
/// send a dead letter again. `WebhookDispatcher` makes the deliveries.
struct WebhookService: ServerPart {
    let context: ServerContext

    /// `POST /webhooks`: deliveries begin with the events committed after it.
    func create(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        guard let asked = DeviceService.decode(WebhookCreate.self, request.body) else {
            return .problem(.malformed, detail: "send {\"url\": \"https://…\"}, with events and forms if you like")
        }
        if let problem = asked.problem { return .problem(.malformed, detail: problem) }
        if let unknown = (asked.forms ?? []).first(where: { registry[$0] == nil }) {
            return .problem(.unknownForm, detail: "this server holds no form \(unknown)")
        }
        do {
            let secret = Self.newSecret()
            let made = try locked {
                try store.transaction { () throws -> StoredWebhook? in
                    var webhook = StoredWebhook(
                        id: 0, workspace: caller.workspace, url: asked.url, events: asked.events ?? HistoryEvent.documentEvents,
                        forms: asked.forms ?? [], secret: secret, previousSecret: nil, previousUntil: nil, createdBy: caller.principal,
                        createdAt: now(), cursor: try store.history.lastSubmissionEvent())
                    webhook.id = try store.webhooks.addWebhook(webhook)
                    return webhook
                }
            }
            guard let made else { return failure(ServerStoreError.idsExhausted, "webhook") }
            return DeviceService.encoded(201, summary(made, counts: (0, 0), secret: secret))
        } catch {
            return failure(error, "webhook")
        }
    }

    /// `GET /webhooks`.
    func list(caller: Caller) -> HTTPResponse {
        do {
            let listed = try locked {
                try store.webhooks.webhooks(workspace: caller.workspace).map {
                    summary($0, counts: try store.webhooks.deliveryCounts(webhook: $0.id), secret: nil)
                }
            }
            return DeviceService.encoded(200, WebhookList(webhooks: listed))
        } catch {
            return failure(error, "webhooks")
        }
    }

    /// `POST /webhooks/{id}/secret`: a new secret; the one it replaces signs beside it for
    /// `WebhookPolicy.previousSecretSeconds`, so that a receiver can switch without losing one.
    func rotate(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        guard let id = Self.id(request.path, suffix: "/secret") else { return .problem(.noSuchWebhook, detail: "no such webhook here") }
        do {
            let secret = Self.newSecret()
            let rotated = try locked {
                try store.transaction { () throws -> StoredWebhook? in
                    guard var webhook = try store.webhooks.webhook(id, workspace: caller.workspace, locked: true) else { return nil }
                    let overlap = settings.webhookPolicy.previousSecretSeconds.multipliedReportingOverflow(by: 1000)
                    let until = now().addingReportingOverflow(overlap.overflow ? 0 : max(0, overlap.partialValue)).partialValue
                    try store.webhooks.setSecrets(id, secret: secret, previous: webhook.secret, previousUntil: until)
                    (webhook.previousSecret, webhook.previousUntil, webhook.secret) = (webhook.secret, until, secret)
                    return webhook
                }
            }
            guard let rotated else { return .problem(.noSuchWebhook, detail: "no webhook \(id) here") }
            let counts = try locked { try store.webhooks.deliveryCounts(webhook: id) }
            return DeviceService.encoded(200, summary(rotated, counts: counts, secret: secret))
        } catch {
            return failure(error, "webhook secret")
        }
    }

    /// `DELETE /webhooks/{id}`: nothing more goes to it; its queue goes with it.
    func delete(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        guard let id = Self.id(request.path, suffix: "") else { return .problem(.noSuchWebhook, detail: "no such webhook here") }
        do {
            let removed = try locked {
                try store.transaction { () throws -> StoredWebhook? in
                    guard let webhook = try store.webhooks.webhook(id, workspace: caller.workspace, locked: true) else { return nil }
                    _ = try store.webhooks.deleteWebhook(id)
                    return webhook
                }
            }
            guard let removed else { return .problem(.noSuchWebhook, detail: "no webhook \(id) here") }
            return DeviceService.encoded(200, summary(removed, counts: (0, 0), secret: nil))
        } catch {
            return failure(error, "webhook removal")
        }
    }

    /// `GET /webhooks/{id}/deliveries[?state=…][&limit=…]`: newest first.
    func deliveries(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        guard let id = Self.id(request.path, suffix: "/deliveries") else {
            return .problem(.noSuchWebhook, detail: "no such webhook here")
        }
        guard let query = WireSyntax.queryMembers(request.query), Set(query.keys).isSubset(of: ["state", "limit"]) else {
            return .problem(.badQuery, detail: "the query takes state= and limit= once each")
        }
        var state: WebhookDelivery.State?
        if let text = query["state"] {
            guard let value = WebhookDelivery.State(rawValue: text) else {
                return .problem(.badQuery, detail: "state is pending, delivered or dead")
            }
            state = value
        }
        var limit = 50
        if let text = query["limit"] {
            guard let value = Int(text), (1...200).contains(value) else { return .problem(.badLimit, detail: "limit is 1 to 200") }
            limit = value
        }
        do {
            let found = try locked { () throws -> [StoredDelivery]? in
                guard try store.webhooks.webhook(id, workspace: caller.workspace, locked: false) != nil else { return nil }
                return try store.webhooks.deliveries(webhook: id, state: state, limit: limit)
            }
            guard let found else { return .problem(.noSuchWebhook, detail: "no webhook \(id) here") }
            return DeviceService.encoded(200, WebhookDeliveryList(deliveries: found.map(Self.summary)))
        } catch {
            return failure(error, "webhook deliveries")
        }
    }

    /// `POST /webhooks/{id}/deliveries/{delivery}/resend`: a dead letter back in the queue, with
    /// a fresh retry window.
    func resend(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[1] == "webhooks", parts[3] == "deliveries", parts[5] == "resend",
            let id = WireSyntax.number(parts[2]), let deliveryID = WireSyntax.number(parts[4])
        else { return .problem(.noSuchWebhook, detail: "use /webhooks/{id}/deliveries/{delivery}/resend") }
        do {
            let resent = try locked {
                try store.transaction { () throws -> Either<StoredDelivery, ProblemCode> in
                    guard try store.webhooks.webhook(id, workspace: caller.workspace, locked: false) != nil else {
                        return .second(.noSuchWebhook)
                    }
                    guard try store.webhooks.resendDelivery(deliveryID, webhook: id, at: now()),
                        let delivery = try store.webhooks.delivery(deliveryID, webhook: id)
                    else { return .second(.noSuchDelivery) }
                    return .first(delivery)
                }
            }
            switch resent {
            case .first(let delivery): return DeviceService.encoded(200, Self.summary(delivery))
            case .second(let code):
                return .problem(code, detail: code == .noSuchWebhook ? "no webhook \(id) here" : "no dead letter \(deliveryID) to resend")
            }
        } catch {
            return failure(error, "webhook resend")
        }
    }

    private func summary(_ webhook: StoredWebhook, counts: (pending: Int, dead: Int), secret: String?) -> Webhook {
        let overlap = webhook.previousUntil.flatMap { $0 > now() ? WireSyntax.timestamp($0) : nil }
        return Webhook(
            id: webhook.id, url: webhook.url, events: webhook.events, forms: webhook.forms, createdBy: webhook.createdBy,
            createdAt: WireSyntax.timestamp(webhook.createdAt), pending: counts.pending, dead: counts.dead, secret: secret,
            previousSecretUntil: overlap)
    }

    static func summary(_ delivery: StoredDelivery) -> WebhookDelivery {
        WebhookDelivery(
            id: delivery.id, webhookID: delivery.webhookID, eventID: delivery.eventID, event: delivery.event,
            documentID: delivery.documentID, state: delivery.state, attempts: delivery.attempts, lastStatus: delivery.lastStatus,
            lastError: delivery.lastError, lastAttemptAt: delivery.lastAttemptAt.map(WireSyntax.timestamp),
            nextAttemptAt: delivery.state == .pending ? WireSyntax.timestamp(delivery.nextAttemptAt) : nil,
            deliveredAt: delivery.deliveredAt.map(WireSyntax.timestamp))
    }

    /// A signing secret: 256 random bits, as `whsec_` and base64url.
    static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        return "whsec_"
            + bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The id in `/webhooks/{id}<suffix>`.
    static func id(_ path: String, suffix: String) -> Int64? {
        guard path.hasPrefix("/webhooks/"), path.hasSuffix(suffix) else { return nil }
        return WireSyntax.number(path.dropFirst("/webhooks/".count).dropLast(suffix.count))
    }
}
