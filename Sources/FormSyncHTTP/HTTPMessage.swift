import FormSyncProtocol
import Foundation

/// A parsed HTTP/1.1 request.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path without the query.
    public var path: String
    public var query: String?
    /// Header names are lower-cased.
    public var headers: [String: String]
    public var body: Data
    /// What the server's preflight noted when it saw this request's head (nil when it noted
    /// nothing, or the request did not come through an `HTTPServer`).
    package var preflightNote: (any Sendable)?

    package init(method: String, path: String, query: String?, headers: [String: String], body: Data) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// A header's value, whatever the case of `name`.
    public func header(_ name: String) -> String? {
        headers[name.utf8.contains { (65...90).contains($0) } ? name.lowercased() : name]
    }
}

extension StringProtocol {
    /// Without the spaces and tabs HTTP allows around values and list items (OWS, RFC 9110
    /// §5.6.3); Unicode spaces are not HTTP's and stay.
    package var trimmingOWS: SubSequence {
        var lower = startIndex
        var upper = endIndex
        while lower < upper, self[lower] == " " || self[lower] == "\t" { lower = index(after: lower) }
        while upper > lower, self[index(before: upper)] == " " || self[index(before: upper)] == "\t" { upper = index(before: upper) }
        return self[lower..<upper]
    }
}

/// An HTTP response to write.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: Data
    /// A body read in pieces as it is sent (a stored file), instead of `body`.
    public var stream: HTTPBodyStream?

    public init(status: Int, headers: [(String, String)] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response whose body is read from `stream` as the client takes it.
    public init(status: Int, headers: [(String, String)] = [], stream: HTTPBodyStream) {
        self.status = status
        self.headers = headers
        self.body = Data()
        self.stream = stream
    }

    /// The same response with a streamed body read whole into `body` (in-process callers).
    public func materialized() throws -> HTTPResponse {
        guard let stream else { return self }
        var whole = self
        whole.body = try stream.readAll()
        whole.stream = nil
        return whole
    }

    /// A JSON reply.
    public static func json(_ status: Int, _ object: Any, headers: [(String, String)] = []) -> HTTPResponse {
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: data)
    }

    /// A problem reply (`application/problem+json`, RFC 9457) for `code`: its status, the status's
    /// reason phrase as its title, and the code as its `code` member and its type.
    public static func problem(
        _ code: ProblemCode, detail: String? = nil, errors: [[String: String]]? = nil, extra: [String: Any] = [:],
        headers: [(String, String)] = []
    ) -> HTTPResponse {
        var object: [String: Any] = extra.merging([
            "type": code.type, "title": reason(code.status), "status": code.status, "code": code.rawValue,
        ]) { _, new in new }
        if let detail { object["detail"] = detail }
        if let errors { object["errors"] = errors }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return HTTPResponse(status: code.status, headers: [("Content-Type", "application/problem+json")] + headers, body: data)
    }

    /// The reason phrase HTTP gives `status` (a problem's title when it has no other).
    package static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 408: return "Request Timeout"
        case 413: return "Content Too Large"
        case 416: return "Range Not Satisfiable"
        case 421: return "Misdirected Request"
        case 422: return "Unprocessable Content"
        case 428: return "Precondition Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        default: return "Status \(status)"
        }
    }
}
