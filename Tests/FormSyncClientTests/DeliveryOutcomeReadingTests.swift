import FormSyncClient
import FormSyncModel
import Foundation
import Testing

/// An app whose upload went through a transfer service of its own (an iOS background session)
/// reads the reply as the HTTP transport would (issue 34, 6).
struct DeliveryOutcomeReadingTests {
    @Test func aReplyHandedBackIsReadAsTheTransportReadsIt() throws {
        let echo = Data(#"{"document_id":"d-1","id":17,"byte_count":4,"digest":"sha-256=:x:"}"#.utf8)
        let done = DeliveryOutcome(status: 201, headers: ["Content-Type": "application/json"], body: echo, documentID: "d-1")
        guard case .done(let acknowledgement) = done else {
            Issue.record("a 201 echoing the document is an acknowledgement, not \(done)")
            return
        }
        #expect(acknowledgement.serverID == 17)
        // The same bytes for another document, or as a portal's HTML, acknowledge nothing.
        #expect(DeliveryOutcome(status: 201, headers: ["Content-Type": "application/json"], body: echo, documentID: "d-2").isUnreachable)
        #expect(
            DeliveryOutcome(status: 200, headers: ["content-type": "text/html"], body: Data("<html>Login</html>".utf8), documentID: "d-1")
                .isUnreachable)
        #expect(
            DeliveryOutcome(status: 302, headers: ["Location": "http://portal.example/"], body: Data(), documentID: "d-1").isUnreachable)
        #expect(DeliveryOutcome(status: 401, headers: [:], body: Data(), documentID: "d-1") == .authExpired)
        let busy = DeliveryOutcome(status: 503, headers: ["Retry-After": "30"], body: Data(), documentID: "d-1")
        guard case .transient(_, let retryAfter) = busy else {
            Issue.record("503 is transient, not \(busy)")
            return
        }
        #expect(retryAfter == .seconds(30))
        let invalid = Data(##"{"code":"invalid-payload","errors":[{"pointer":"#/photo","code":"content_type","detail":"no"}]}"##.utf8)
        let rejected = DeliveryOutcome(status: 422, headers: ["Content-Type": "application/problem+json"], body: invalid, documentID: "d-1")
        guard case .rejected(_, let errors) = rejected else {
            Issue.record("422 is rejected, not \(rejected)")
            return
        }
        #expect(errors.map(\.pointer) == ["#/photo"])
    }
}

extension DeliveryOutcome {
    var isUnreachable: Bool {
        if case .unreachable = self { return true }
        return false
    }
}
