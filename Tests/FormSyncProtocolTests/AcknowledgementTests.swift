import FormSyncProtocol
import Testing

/// One test of what acknowledges a write, read alike by the client and by conformance.
struct AcknowledgementTests {
    @Test func onlyATwoHundredJSONObjectThatEchoesTheDocumentAcknowledgesIt() {
        let echo: [String: Any] = [Acknowledgement.documentID: "doc-1", Acknowledgement.id: 7]
        #expect(Acknowledgement.acknowledges(status: 201, contentType: "application/json", object: echo, document: "doc-1"))
        #expect(Acknowledgement.acknowledges(status: 200, contentType: "Application/JSON; charset=utf-8", object: echo, document: "doc-1"))
        #expect(!Acknowledgement.acknowledges(status: 201, contentType: "application/json", object: echo, document: "doc-2"))
        #expect(!Acknowledgement.acknowledges(status: 200, contentType: "text/html", object: echo, document: "doc-1"))
        #expect(!Acknowledgement.acknowledges(status: 409, contentType: "application/json", object: echo, document: "doc-1"))
        #expect(!Acknowledgement.acknowledges(status: 200, contentType: nil, object: echo, document: "doc-1"))
        #expect(!Acknowledgement.acknowledges(status: 200, contentType: "application/json", object: nil, document: "doc-1"))
        #expect(!Acknowledgement.acknowledges(status: 200, contentType: "application/json", object: ["document_id": 1], document: "1"))
    }
}
