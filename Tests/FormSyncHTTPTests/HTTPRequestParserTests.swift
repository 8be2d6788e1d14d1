import Testing

@testable import FormSyncHTTP

/// The request parser's reading of what comes before a request line (RFC 9112 §2.2).
struct HTTPRequestParserTests {
    static func feed(_ text: String) -> (HTTPRequestParser, HTTPRequestParser.Step) {
        var parser = HTTPRequestParser()
        parser.append(Array(text.utf8))
        let step = parser.next()
        return (parser, step)
    }

    @Test func upToFourEmptyLinesBeforeARequestLineAreIgnored() {
        let (_, step) = Self.feed(String(repeating: "\r\n", count: 4) + "GET /health HTTP/1.1\r\n\r\n")
        guard case .head(let request, _) = step else {
            Issue.record("not a head: \(step)")
            return
        }
        #expect(request.path == "/health")
    }

    @Test func aFifthEmptyLineIsRefusedInsteadOfReadForEver() {
        guard case .refuse(.malformed, _) = Self.feed(String(repeating: "\r\n", count: 5)).1 else {
            Issue.record("five empty lines were not refused")
            return
        }
    }

    @Test func anEmptyLineMakesTheConnectionMidRequestUntilItsRequestArrives() {
        var (parser, step) = Self.feed("\r\n")
        guard case .needMore = step else {
            Issue.record("\(step)")
            return
        }
        #expect(parser.isMidRequest)
        parser.append(Array("GET / HTTP/1.1\r\n\r\n".utf8))
        _ = parser.next()
        _ = parser.beginBody(limit: 0)
        #expect(!parser.isMidRequest, "the count starts again with the next request")
    }
}
