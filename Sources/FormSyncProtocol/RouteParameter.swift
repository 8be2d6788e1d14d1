/// A value a route reads from its request besides the body: a header, a query item or a part of
/// its path (docs/PROTOCOL.md, §1 and "Endpoints"). `Route.parameters` lists them, and the
/// OpenAPI description is made from that list.
public struct RouteParameter: Sendable, Equatable {
    /// Where the value travels.
    public enum Location: String, Sendable {
        case header, query, path
    }

    public var name: String
    public var location: Location
    /// Whether a request without it is refused.
    public var required: Bool
    /// What it says, in one sentence.
    public var summary: String

    public init(_ name: String, in location: Location, required: Bool, _ summary: String) {
        self.name = name
        self.location = location
        self.required = required
        self.summary = summary
    }

    static let workspace = RouteParameter(
        "FormSync-Workspace", in: .header, required: true, "The workspace the request acts in; one its token was issued for.")
    static let idempotencyKey = RouteParameter(
        "Idempotency-Key", in: .header, required: true, "One per exact outbound request; a retry of the same attempt reuses it.")
    static let document = RouteParameter(
        "FormSync-Document", in: .header, required: true, "The logical document's identity, minted on the device at capture.")
    static let uploadID = RouteParameter("id", in: .path, required: true, "The upload, as the Location of POST /uploads names it.")
}
