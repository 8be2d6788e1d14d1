import FormSyncProtocol
import Foundation
import Testing

/// The routes are listed once: `Route` and docs/PROTOCOL.md's endpoints agree, and a request
/// finds the route its method and path name.
struct RouteTests {
    static func protocolText() throws -> String {
        try String(contentsOf: ProblemCodeTests.root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
    }

    /// The `METHOD path` spans of a line, query strings left out.
    static func spans(in line: Substring) -> [String] {
        line.split(separator: "`", omittingEmptySubsequences: false).enumerated().compactMap { part in
            guard part.offset % 2 == 1 else { return nil }
            let words = part.element.split(separator: " ", maxSplits: 1)
            guard words.count == 2, ["GET", "POST", "HEAD", "PATCH", "PUT", "DELETE"].contains(words[0]) else { return nil }
            return "\(words[0]) \(words[1].split(separator: "?", maxSplits: 1)[0])"
        }
    }

    @Test func everyRouteIsInTheProtocolAndEveryEndpointHeadingIsARoute() throws {
        let text = try Self.protocolText()
        let routes = Set(Route.allCases.map { "\($0.method) \($0.template)" })
        for route in routes { #expect(text.contains("`\(route)"), "PROTOCOL.md does not name \(route)") }
        let headings = text.split(separator: "\n").filter { $0.hasPrefix("### ") || $0.hasPrefix("#### ") }
        var named: Set<String> = []
        for heading in headings {
            for span in Self.spans(in: heading) {
                named.insert(span)
                #expect(routes.contains(span), "PROTOCOL.md's heading \(heading) names \(span), which no route is")
            }
        }
        #expect(named.count >= 9, "the endpoint headings were not read: \(named)")
    }

    @Test(arguments: [
        ("GET", "/health", Route.health), ("POST", "/auth/refresh", .refresh),
        ("GET", "/files/sha-256/" + String(repeating: "a", count: 64), .fileLookup), ("GET", "/files/12", .fileFetch),
        ("GET", "/pending-files", .pendingFiles), ("GET", "/changes", .changes), ("GET", "/records/Customer/4", .record),
        ("GET", "/documents/doc-1", .document), ("POST", "/files", .fileUpload), ("POST", "/uploads", .uploadCreate),
        ("HEAD", "/uploads/u1", .uploadOffset), ("PATCH", "/uploads/u1", .uploadAppend), ("POST", "/customers/5/orders", .submission),
        ("POST", "/auth/enrol", .enrol), ("POST", "/auth/enrolments", .enrolmentCreate), ("GET", "/auth/devices", .devices),
        ("POST", "/auth/revocations", .revocation),
    ])
    func aRequestTakesTheRouteItsMethodAndPathName(_ method: String, _ path: String, _ route: Route) {
        #expect(Route.match(method: method, path: path) == route)
        #expect(route.method == method)
    }

    @Test func aWrongMethodOnAFixedPathIsNotAnUnknownPath() {
        #expect(Route.match(method: "DELETE", path: "/health") == nil)
        #expect(Route.isFixedPath("/health") && Route.isFixedPath("/files") && Route.isFixedPath("/uploads"))
        #expect(!Route.isFixedPath("/files/12") && !Route.isFixedPath("/nowhere"))
        #expect(Route.match(method: "PUT", path: "/files/12") == nil)
        #expect(Route.allCases.filter(\.isDocumentWrite) == [.fileUpload, .uploadCreate, .submission])
        #expect(Route.allCases.filter { !$0.needsAccessToken } == [.health, .refresh, .enrol])
        #expect(
            Route.allCases.filter(\.isBackOfficeOnly) == [
                .enrolmentCreate, .devices, .revocation, .supportRequestCreate, .supportBundles, .submissions, .documentHistory,
                .recordHistory, .review, .webhookCreate, .webhooks, .webhookSecret, .webhookDelete, .webhookDeliveries, .webhookResend,
            ])
        #expect(Route.match(method: "GET", path: "/auth/enrol") == nil && Route.isFixedPath("/auth/enrol"))
    }
}
