import FormSyncProtocol
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The back office's half of the loop over HTTP, with this transport's (back-office) token:
/// the submissions feed, histories and reviews (docs/PROTOCOL.md, "The back office's half").
extension HTTPTransport {
    /// `GET /submissions`: one page of the workspace's documents' events after `cursor` (nil:
    /// from the start), of `form` alone and committed in `since ..< until` when given.
    public func submissions(
        after cursor: String? = nil, form: String? = nil, since: Date? = nil, until: Date? = nil, limit: Int = 100
    ) async -> BackOfficeReply<SubmissionsPage> {
        var items = [URLQueryItem(name: "limit", value: String(max(1, min(limit, SubmissionsPage.maxLimit))))]
        if let cursor { items.append(URLQueryItem(name: "cursor", value: cursor)) }
        if let form { items.append(URLQueryItem(name: "form", value: form)) }
        if let since { items.append(URLQueryItem(name: "since", value: SupportBundleBuilder.timestamp(since))) }
        if let until { items.append(URLQueryItem(name: "until", value: SupportBundleBuilder.timestamp(until))) }
        var components = URLComponents()
        components.queryItems = items
        // A `+` in an offset is a plus, not a space, to the server (RFC 3986).
        let query = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        return await backOffice("GET", "/submissions?" + query, body: nil, expecting: [200])
    }

    /// `GET /documents/{id}/history`: the document's versions with their authors and changed
    /// fields, and its reviews.
    public func history(ofDocument documentID: String) async -> BackOfficeReply<VersionHistory> {
        guard Identifier.isValid(documentID) else { return .refused(code: .noSuchDocument, detail: "not a document id") }
        return await backOffice("GET", "/documents/\(documentID)/history", body: nil, expecting: [200])
    }

    /// `GET /records/{type}/{id}/history`: the record's versions with their authors.
    public func history(ofRecord type: String, id: Int64) async -> BackOfficeReply<VersionHistory> {
        guard let escaped = type.addingPercentEncoding(withAllowedCharacters: .alphanumerics), !escaped.isEmpty else {
            return .refused(code: .noSuchRecord, detail: "not a record type")
        }
        return await backOffice("GET", "/records/\(escaped)/\(id)/history", body: nil, expecting: [200])
    }

    /// `POST /documents/{id}/reviews`: the back office's verdict on the document's current
    /// version (or on `request.version`, refused when the document moved on).
    public func review(_ documentID: String, _ request: ReviewRequest) async -> BackOfficeReply<Review> {
        guard Identifier.isValid(documentID) else { return .refused(code: .noSuchDocument, detail: "not a document id") }
        return await backOffice(
            "POST", "/documents/\(documentID)/reviews", body: try? JSONEncoder().encode(request), expecting: [201, 200])
    }
}
