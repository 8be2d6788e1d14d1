import FieldForms
import FormSyncHTTP
import FormSyncServer
import FormSyncTesting
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Raw bytes on a socket: the server answers malformed input with a clean 400 and survives it.
struct HTTPServerRobustnessTests {
    func exchange(_ port: UInt16, _ bytes: Data) -> String { RawSocket.exchange(port, bytes) }

    @Test func malformedRequestsGetACleanStatusAndTheServerKeepsServing() async throws {
        try await OffThePool.run {
            let world = try World()
            let port = world.server.port
            #expect(exchange(port, Data("GARBAGE\r\n\r\n".utf8)).hasPrefix("HTTP/1.1 400 "))
            #expect(exchange(port, Data("GET /health HTTP/1.1\r\nNo colon here\r\n\r\n".utf8)).hasPrefix("HTTP/1.1 400 "))
            #expect(exchange(port, Data("POST /files HTTP/1.1\r\nContent-Length: banana\r\n\r\n".utf8)).hasPrefix("HTTP/1.1 400 "))
            let token = try world.server.issueAccessToken(workspaces: ["acme"])
            let writeHeaders =
                "Authorization: Bearer \(token)\r\nFormSync-Workspace: acme\r\nIdempotency-Key: k1\r\nFormSync-Document: d1\r\n"
            #expect(
                exchange(port, Data("POST /files HTTP/1.1\r\n\(writeHeaders)Content-Length: 99999999999\r\n\r\n".utf8)).hasPrefix(
                    "HTTP/1.1 413 "))
            // Fewer bytes than Content-Length, then the peer stops sending: refused, never processed.
            #expect(
                exchange(port, Data("POST /files HTTP/1.1\r\n\(writeHeaders)Content-Length: 10\r\n\r\nshort".utf8)).hasPrefix(
                    "HTTP/1.1 400 "))
            #expect(world.server.fileIDs().isEmpty)
            let noise = Data((0..<2000).map { _ in UInt8.random(in: 0...255) }) + Data("\r\n\r\n".utf8)
            #expect(exchange(port, noise).hasPrefix("HTTP/1.1 400 "))
            // No head terminator before the peer stopped sending: a request cut short is refused.
            #expect(exchange(port, Data((0..<2000).map { _ in UInt8(ascii: "a") })).hasPrefix("HTTP/1.1 400 "))
            // Keep-alive: two requests on one connection, two replies.
            let twice = exchange(
                port, Data("GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
            #expect(twice.components(separatedBy: "HTTP/1.1 200 OK").count == 3)
            // Chunked bodies are read.
            let chunked = exchange(
                port,
                Data("POST /auth/refresh HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\n{\"re\r\n0\r\n\r\n".utf8)
            )
            #expect(chunked.hasPrefix("HTTP/1.1 400 "))  // read whole, refused as JSON, not as framing
            #expect(exchange(port, Data("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n".utf8)).contains("\"service\":\"formsync\""))
        }
    }

    @Test func writesNeedABearerTokenAndTheProtocolHeaders() async throws {
        try await OffThePool.run {
            let world = try World()
            let port = world.server.port
            let body = #"{"name":"Ana","segment":"retail"}"#
            let noToken = exchange(
                port, Data("POST /customers HTTP/1.1\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8))
            #expect(noToken.hasPrefix("HTTP/1.1 401 "))
            let token = try world.server.issueAccessToken(workspaces: ["acme"])
            let noKey = exchange(
                port,
                Data(
                    "POST /customers HTTP/1.1\r\nAuthorization: Bearer \(token)\r\nFormSync-Workspace: acme\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
                        .utf8))
            #expect(noKey.hasPrefix("HTTP/1.1 400 "))
            #expect(noKey.contains("Idempotency-Key"))
            #expect(world.server.documents().isEmpty)
        }
    }

    /// A lost reply (the handler answers nil) after a request on a kept-alive connection fails
    /// the client at once. Closed before any byte of a reply, the connection made libcurl resend
    /// the request on a new one, which URLSession on Linux sent without its body: the exchange
    /// stalled until a timeout, and the server saw a third head whose body never came.
    @Test func aLostReplyOnAReusedConnectionFailsTheClientAtOnceAndIsNotResent() async throws {
        let heads = Mutex(0)
        let server = HTTPServer(
            preflight: { _ in
                heads.withLock { $0 += 1 }
                return .read(maxBodyBytes: 1 << 20)
            },
            handler: { request in request.method == "PATCH" ? nil : HTTPResponse(status: 204) })
        let port = try server.start()
        defer { server.stop() }
        let session = URLSession(configuration: .ephemeral)
        func send(_ method: String, _ body: Data) async -> Result<Int, any Error> {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/x")!)
            request.httpMethod = method
            request.httpBody = body
            request.timeoutInterval = 60
            do {
                let (_, response) = try await session.data(for: request)
                return .success((response as? HTTPURLResponse)?.statusCode ?? 0)
            } catch {
                return .failure(error)
            }
        }
        #expect(try await send("POST", Data(count: 10)).get() == 204)
        let lost = await send("PATCH", Data(repeating: 7, count: 100_000))
        guard case .failure(let error) = lost else {
            Issue.record("a lost reply came back as \(lost)")
            return
        }
        #expect((error as? URLError)?.code != .timedOut, "\(error)")
        #expect(heads.withLock { $0 } == 2, "the request was not sent again: \(error)")
    }

    /// What the preflight notes of a request's head reaches that request's handler, and only
    /// that request's: the next one on the same connection sees its own preflight's note.
    @Test func whatThePreflightNotedOfAHeadReachesThatRequestsHandlerAndNoOther() async throws {
        let server = HTTPServer(
            preflight: { head in .read(maxBodyBytes: 1 << 20, note: head.path == "/noted" ? "noted \(head.method)" : nil) },
            handler: { request in
                HTTPResponse(status: 200, headers: [], body: Data(((request.preflightNote as? String) ?? "nothing").utf8))
            })
        let port = try server.start()
        defer { server.stop() }
        let session = URLSession(configuration: .ephemeral)
        func send(_ method: String, _ path: String) async throws -> String {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
            request.httpMethod = method
            if method == "POST" { request.httpBody = Data("body".utf8) }
            let (body, _) = try await session.data(for: request)
            return String(decoding: body, as: UTF8.self)
        }
        #expect(try await send("POST", "/noted") == "noted POST")
        #expect(try await send("POST", "/plain") == "nothing")
        #expect(try await send("GET", "/noted") == "noted GET")
        #expect(try await send("GET", "/plain") == "nothing")
    }
}
