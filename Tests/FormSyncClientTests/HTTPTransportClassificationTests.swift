import FieldForms
import FormSyncModel
import FormSyncProtocol
import Foundation
import Testing

@testable import FormSyncClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct HTTPTransportClassificationTests {
    let json = ["content-type": "application/json"]

    func classify(_ status: Int, _ headers: [String: String] = [:], _ body: String = "") -> DeliveryOutcome {
        HTTPTransport.classify(status: status, headers: headers, body: Data(body.utf8), documentID: "doc-1")
    }

    @Test func onlyATwoHundredThatEchoesTheDocumentIsAnAcknowledgement() {
        #expect(
            classify(201, json.merging(["etag": "\"3\""]) { a, _ in a }, #"{"document_id":"doc-1","id":42}"#)
                == .done(ServerAcknowledgement(serverID: 42, version: "\"3\"")))
        for (headers, body) in [
            (["content-type": "text/html"], "<html>Welcome to the Wi-Fi</html>"),
            (json, #"{"document_id":"doc-2","id":42}"#),
            (json, ""),
            (json, #"{"id":42}"#),
        ] {
            guard case .unreachable = classify(200, headers, body) else {
                Issue.record("\(body) was taken for an acknowledgement")
                continue
            }
        }
    }

    @Test func theQuickReadingOfAnAcknowledgementAgreesWithTheFullOne() throws {
        let record = try FormRegistry.encode(order(1))
        let common =
            #"{"document_id":"doc-1","form":"SalesOrder","form_version":1,"id":42,"record":"# + String(decoding: record, as: UTF8.self)
            + #","version":"\"3\""}"#
        let etag = json.merging(["etag": "\"3\""]) { a, _ in a }
        #expect(
            HTTPTransport.quickAcknowledgement(headers: etag, body: Data(common.utf8), documentID: "doc-1")
                == ServerAcknowledgement(serverID: 42, version: "\"3\""))
        let replies: [(String, [String: String], String)] = [
            ("doc-1", etag, common),
            ("doc-1", json, common),  // no ETag: the version is the body's (the full reading)
            ("doc-1", etag, #"{"document_id":"doc-1"}"#),
            ("doc-1", etag, #"{"id":42,"document_id":"doc-1","id":43}"#),
            ("doc-1", etag, #"{"document_id":"doc-\u0031","id":42}"#),  // escaped: the full reading decides
            ("doc-1", etag, #"{"document_id":"doc-2","id":42}"#),
            ("doc\\1", etag, #"{"document_id":"doc\\1","id":42}"#),
            ("doc-1", etag, #"{"document_id":"doc-1","id":4.0}"#),
            ("doc-1", etag, #"{"document_id":"doc-1","id":"42"}"#),
            ("doc-1", etag, #"{"document_id":"doc-1","id":null}"#),
            ("doc-1", etag, #"{"document_id":"doc-1","id":0}"#),
            ("doc-1", etag, #"{"document_id":"doc-1","id":9007199254740992}"#),
            ("doc-1", etag, #"{"document_id":"doc-1","id":7,"entity":{"type":"Order","id":7,"version":1,"record":{"a":1}}}"#),
            ("doc-1", etag, #"{"document_id":"doc-1","id":7"#),
            ("doc-1", etag, #"["doc-1"]"#),
            ("doc-1", ["content-type": "text/html"], common),
        ]
        for (document, headers, body) in replies {
            let quick = HTTPTransport.classify(status: 201, headers: headers, body: Data(body.utf8), documentID: document)
            let full = HTTPTransport.classify(status: 201, headers: headers, body: Data(body.utf8), documentID: document, quick: false)
            #expect(quick == full, "\(body)")
        }
    }

    @Test func aServerIDOrVersionOutsideWhatTheProtocolAllowsIsNotTakenOnTrust() {
        for id in ["0", "-5", "1.5", "1e300", "9007199254740992", "\"7\"", "null"] {
            #expect(
                classify(201, json, #"{"document_id":"doc-1","id":\#(id)}"#) == .done(ServerAcknowledgement(serverID: nil, version: nil)),
                "\(id)")
        }
        #expect(
            classify(201, json, #"{"document_id":"doc-1","id":9007199254740991}"#)
                == .done(ServerAcknowledgement(serverID: 9_007_199_254_740_991)))
        let smuggled = json.merging(["etag": "\"3\"\r\nX-Evil: 1"]) { a, _ in a }
        #expect(classify(201, smuggled, #"{"document_id":"doc-1","id":4}"#) == .done(ServerAcknowledgement(serverID: 4, version: nil)))
        #expect(
            classify(201, json.merging(["etag": String(repeating: "9", count: 300)]) { a, _ in a }, #"{"document_id":"doc-1","id":4}"#)
                == .done(ServerAcknowledgement(serverID: 4, version: nil)))
    }

    @Test func statusesMapToTheFailureTaxonomy() {
        #expect(classify(401) == .authExpired)
        #expect(
            classify(412, json.merging(["etag": "\"7\""]) { a, _ in a }, #"{"record":{"b":1,"a":2}}"#)
                == .conflict(current: Data(#"{"a":2,"b":1}"#.utf8), version: "\"7\""))
        #expect(classify(503, ["retry-after": "120"]) == .transient(reason: "HTTP 503", retryAfter: .milliseconds(120_000)))
        for status in [408, 409, 425, 429, 500, 502] {
            guard case .transient = classify(status) else {
                Issue.record("\(status) is not transient")
                continue
            }
        }
        for status in [400, 403, 404, 413] {
            guard case .rejected(let reason, let errors) = classify(status) else {
                Issue.record("\(status) is not rejected")
                continue
            }
            #expect(reason == "HTTP \(status)")
            #expect(errors.isEmpty)
        }
        let problem =
            ##"{"title":"Unprocessable","detail":"1 rule","errors":[{"pointer":"#/lines/0/sku","code":"pattern","detail":"Bad format."}]}"##
        #expect(
            classify(422, ["content-type": "application/problem+json"], problem)
                == .rejected(
                    reason: "HTTP 422: 1 rule", fieldErrors: [FieldError(pointer: "#/lines/0/sku", code: "pattern", detail: "Bad format.")])
        )
    }

    /// A document id held under another form, workspace or principal is a refusal no retry
    /// changes: `document-principal-mismatch` was read as transient and retried until exhausted.
    @Test func aDocumentIDHeldElsewhereIsRejectedAtOnceAndAKeyInFlightIsRetried() {
        let problemJSON = ["content-type": "application/problem+json"]
        for code in [ProblemCode.documentFormMismatch, .documentWorkspaceMismatch, .documentPrincipalMismatch] {
            let body = String(decoding: HTTPResponseBody.problem(code), as: UTF8.self)
            guard case .rejected = classify(code.status, problemJSON, body) else {
                Issue.record("\(code.rawValue) is not rejected: \(classify(code.status, problemJSON, body))")
                continue
            }
        }
        let inFlight = String(decoding: HTTPResponseBody.problem(.keyInFlight), as: UTF8.self)
        guard case .transient = classify(409, problemJSON, inFlight) else {
            Issue.record("key-in-flight is not transient")
            return
        }
    }

    @Test func retryAfterReadsSecondsAndHTTPDates() {
        let now = Date(timeIntervalSince1970: 1_796_027_217)
        #expect(HTTPTransport.retryAfter("5") == 5000)
        #expect(HTTPTransport.retryAfter("Mon, 30 Nov 2026 08:27:27 GMT", now: now) == 30_000)
        #expect(HTTPTransport.retryAfter("Mon, 30 Nov 2026 08:00:00 GMT", now: now) == 0)
        #expect(HTTPTransport.retryAfter("soon") == nil)
        #expect(HTTPTransport.retryAfter("99999999999999999999999") == HTTPTransport.retryAfterCeilingMilliseconds)
        #expect(HTTPTransport.retryAfter("9223372036854775807") == HTTPTransport.retryAfterCeilingMilliseconds)
        #expect(HTTPTransport.retryAfter("Fri, 31 Dec 9999 23:59:59 GMT", now: now) == HTTPTransport.retryAfterCeilingMilliseconds)
        #expect(HTTPTransport.retryAfter("-5") == nil)
        #expect(HTTPTransport.retryAfter(String(repeating: "9", count: 10_000)) == nil)
        #expect(HTTPTransport.retryAfter(nil) == nil)
    }

    @Test func aRefusedConnectionIsUnreachableAndTheProbeReadsOffline() async throws {
        // Port 9 (discard) has no listener on this loopback.
        let transport = HTTPTransport(workspace: "w", baseURL: URL(string: "http://127.0.0.1:9")!, timeout: .seconds(2)) { "t" }
        let outcome = await transport.send(
            OutboundRequest(
                itemID: 1, documentID: "d", attemptID: "a", workspace: "w",
                body: .submission(form: "F", version: 1, endpoint: "/x", payload: Data("{}".utf8), baseVersion: nil)))
        guard case .unreachable(let reason) = outcome else {
            Issue.record("expected unreachable, got \(outcome)")
            return
        }
        #expect(reason == "cannot connect to the server")
        #expect(await transport.probe() == false)
    }
}

/// What a resumable upload takes from a server's reply is checked before it is used: a
/// Location elsewhere (which would take the token there), offsets that are not plain digits.
struct ResumableUploadReplyTests {
    @Test func onlyAnUploadPathOnTheSameServerIsFollowed() {
        #expect(ResumableUpload.isUploadPath("/uploads/3f2a-91bc"))
        #expect(!ResumableUpload.isUploadPath("https://evil.example/uploads/3f2a"))
        #expect(!ResumableUpload.isUploadPath("//evil.example/uploads/3f2a"))
        #expect(!ResumableUpload.isUploadPath("/uploads/../auth/refresh"))
        #expect(!ResumableUpload.isUploadPath("/uploads/a?b=c"))
        #expect(!ResumableUpload.isUploadPath("/uploads/" + String(repeating: "a", count: 300)))
        #expect(!ResumableUpload.isUploadPath("/files"))
    }

    @Test func absurdOffsetsAreNoOffsets() {
        #expect(ResumableUpload.offset("1048576") == 1_048_576)
        #expect(ResumableUpload.offset("-1") == nil)
        #expect(ResumableUpload.offset("1e9") == nil)
        #expect(ResumableUpload.offset("99999999999999999999") == nil)
        #expect(ResumableUpload.offset("") == nil)
        #expect(ResumableUpload.offset(nil) == nil)
        #expect(ResumableUpload.offset(" 12") == nil)
    }
}

/// A problem reply's body as a FormSync server writes it, without linking the server.
enum HTTPResponseBody {
    static func problem(_ code: ProblemCode) -> Data {
        Data(#"{"code":"\#(code.rawValue)","status":\#(code.status),"type":"\#(code.type)","title":"t"}"#.utf8)
    }
}
