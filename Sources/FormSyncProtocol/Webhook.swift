/// A receiver the back office registered (`POST /webhooks`, docs/PROTOCOL.md, "Webhooks"): the
/// server posts each of the workspace's document events it asked for, signed, retried and in
/// order per document, until the receiver answers 2xx or the retry window closes.
public struct Webhook: Codable, Sendable, Equatable {
    public var id: Int64
    /// Where events go: `https://` (or `http://`), no credentials in it.
    public var url: String
    /// The events it receives (`HistoryEvent.documentEvents` names).
    public var events: [HistoryEvent]
    /// Only these forms' documents; empty: every form.
    public var forms: [String]
    public var createdBy: String
    /// RFC 3339, the server's clock.
    public var createdAt: String
    /// Events waiting to go, and dead letters (deliveries that gave up), now.
    public var pending: Int
    public var dead: Int
    /// The signing secret: in the reply that made it or rotated it only, never again.
    public var secret: String?
    /// While a rotated secret still signs beside the new one (RFC 3339), nil otherwise.
    public var previousSecretUntil: String?

    public init(
        id: Int64, url: String, events: [HistoryEvent], forms: [String], createdBy: String, createdAt: String, pending: Int, dead: Int,
        secret: String?, previousSecretUntil: String?
    ) {
        self.id = id
        self.url = url
        self.events = events
        self.forms = forms
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.pending = pending
        self.dead = dead
        self.secret = secret
        self.previousSecretUntil = previousSecretUntil
    }

    enum CodingKeys: String, CodingKey {
        case id, url, events, forms
        case createdBy = "created_by"
        case createdAt = "created_at"
        case pending, dead, secret
        case previousSecretUntil = "previous_secret_until"
    }
}

/// What the back office sends to register a receiver (`POST /webhooks`).
public struct WebhookCreate: Codable, Sendable, Equatable {
    public var url: String
    /// Absent: every document event.
    public var events: [HistoryEvent]?
    /// Absent or empty: every form.
    public var forms: [String]?

    /// The longest URL a webhook may have.
    public static let maxURLCharacters = 2048

    public init(url: String, events: [HistoryEvent]? = nil, forms: [String]? = nil) {
        self.url = url
        self.events = events
        self.forms = forms
    }

    /// Why the server refuses it, or nil: a URL that is not an absolute `http(s)` URL with a
    /// host, one with a user or password in it or a fragment, an event that is not a
    /// document's, a form name that is not an identifier.
    public var problem: String? {
        guard url.utf8.count <= Self.maxURLCharacters,
            !url.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false })
        else { return "url is at most \(Self.maxURLCharacters) characters, with no spaces or control characters" }
        let lower = url.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else { return "url begins with https:// (or http://)" }
        let rest = url.drop { $0 != ":" }.dropFirst(3)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if authority.isEmpty { return "url names a host" }
        if authority.contains("@") { return "url carries no user or password: the signature proves the sender" }
        if url.contains("#") { return "url has no fragment" }
        if let events, events.isEmpty || events.contains(where: { !HistoryEvent.documentEvents.contains($0) }) {
            return "events are some of \(HistoryEvent.documentEvents.map(\.rawValue).joined(separator: ", "))"
        }
        if let forms, forms.count > 100 || forms.contains(where: { !Identifier.isValid($0) }) {
            return "forms are at most 100 form names"
        }
        return nil
    }
}

/// The back office's receivers (`GET /webhooks`).
public struct WebhookList: Codable, Sendable, Equatable {
    public var webhooks: [Webhook]

    public init(webhooks: [Webhook]) {
        self.webhooks = webhooks
    }
}
