import Foundation
import FormSyncHTTP
import FormSyncServer
import Testing

/// `formsync conformance` passes against the reference server, and fails against a server that
/// breaks the protocol (so its passes mean something).
struct ConformanceTests {
    @Test func theReferenceServerPassesEveryCheck() async throws {
        let world = try World()
        let other = try world.server.issueAccessToken(principal: "someone-else", workspaces: World.workspaces)
        let office = try world.server.issueAccessToken(principal: "office", workspaces: World.workspaces, role: .backOffice)
        let result = try await ProcessRunner.run(
            DemoProcessTests.formsync,
            ["conformance", world.server.baseURL.absoluteString, "--refresh-token", world.refreshToken, "--other-token", other, "--back-office-token", office])
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        #expect(result.output.contains("0 failed"))
        #expect(!result.output.contains("FAIL"))
        // The wall, route by route (issue 31): 7 routes × no header, a foreign workspace,
        // another principal (and what its reply carries), the back office.
        let wall = result.output.split(separator: "\n").filter { $0.hasPrefix("pass  access: ") }
        #expect(wall.count == 7 * 5, "\(wall.count) access checks passed")
        #expect(result.output.contains("pass  access: GET /documents/{id} by another principal is 404"))
        #expect(!result.output.contains("not checked"))
    }

    @Test func withoutTheOtherTokensTheWallBetweenPrincipalsIsListedAsNotChecked() async throws {
        let world = try World()
        let result = try await ProcessRunner.run(DemoProcessTests.formsync, ["conformance", world.server.baseURL.absoluteString, "--refresh-token", world.refreshToken])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("not checked  access: another principal's and the back office's reach"))
    }

    /// A server whose `/health` answers as FormSync's does and whose every other reply is
    /// `misbehave`'s.
    static func hostile(_ misbehave: @escaping @Sendable (Int32) -> Void) throws -> RawSocket.Server {
        let health = Data("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 49\r\n\r\n{\"service\":\"formsync\",\"status\":\"ok\",\"protocol\":1}".utf8)
        let server = try RawSocket.Server()
        server.start { fd in
            guard let request = RawSocket.readRequest(fd) else { return }
            if String(decoding: request.prefix(12), as: UTF8.self).hasPrefix("GET /health ") {
                RawSocket.send(fd, health)
                return
            }
            misbehave(fd)
        }
        return server
    }

    @Test func aServerThatTricklesEveryReplyEndsTheRunAtItsBoundsAndNothingAnsweringStopsItAtOnce() async throws {
        // Every reply but health trickles a byte every 100 ms for a minute.
        let server = try Self.hostile { fd in
            RawSocket.send(fd, Data("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{".utf8))
            RawSocket.trickle(fd, ticks: 600, cutShort: RawSocket.CutShortCount())
        }
        let started = ContinuousClock.now
        let bounded = try await ProcessRunner.run(
            DemoProcessTests.formsync, ["conformance", server.url.absoluteString, "--token", "t", "--timeout", "1", "--max-time", "4"])
        #expect(bounded.status == 1)
        #expect(bounded.output.contains("pass  GET /health"))
        // Without the bounds each of its ~80 exchanges would wait a minute; the run ends.
        #expect(started.duration(to: .now) < .seconds(60), "the run did not end near its bound")

        // A server that floods every reply but health with bytes that never end: each exchange
        // stops at its byte bound, and the run ends.
        let flood = try Self.hostile { fd in
            RawSocket.send(fd, Data("HTTP/1.1 200 OK\r\nX-Pad: 1\r\n".utf8))
            let chunk = Data(repeating: 0x61, count: 1 << 16)
            for _ in 0..<4096 { RawSocket.send(fd, chunk) }  // once the peer is gone, each send fails at once
        }
        let flooded = try await ProcessRunner.run(DemoProcessTests.formsync, ["conformance", flood.url.absoluteString, "--token", "t", "--timeout", "2", "--max-time", "20"])
        #expect(flooded.status == 1)
        #expect(flooded.output.contains("pass  GET /health"))

        // A port where a socket accepts and never answers: one line, and the run stops.
        let silent = try RawSocket.Server()
        silent.start { fd in _ = RawSocket.readRequest(fd); Thread.sleep(forTimeInterval: 30) }
        let stopped = try await ProcessRunner.run(DemoProcessTests.formsync, ["conformance", silent.url.absoluteString, "--token", "t", "--timeout", "1"])
        #expect(stopped.status == 1)
        #expect(stopped.output.contains("stop  nothing answered"))
        #expect(stopped.output.contains("1 failed"))
    }

    @Test func aServerThatAcknowledgesAnythingFails() async throws {
        // Every write gets 200 with an empty JSON object: no document id, no ledger, no rules.
        let liar = HTTPServer { request in
            request.path == "/health" ? .json(200, ["service": "formsync", "status": "ok"]) : .json(200, [String: String]())
        }
        let port = try liar.start()
        defer { liar.stop() }
        let result = try await ProcessRunner.run(DemoProcessTests.formsync, ["conformance", "http://127.0.0.1:\(port)", "--token", "t"])
        #expect(result.status == 1)
        #expect(result.output.contains("FAIL  a create is acknowledged with 2xx JSON echoing the document id"))
        #expect(result.output.contains("FAIL  a write with a bad token is 401"))
    }

    @Test func usageMistakesExitTwo() async throws {
        let none = try await ProcessRunner.run(DemoProcessTests.formsync, ["conformance", "http://127.0.0.1:9"])
        #expect(none.status == 2)
        let ftp = try await ProcessRunner.run(DemoProcessTests.formsync, ["conformance", "ftp://example", "--token", "t"])
        #expect(ftp.status == 2)
    }
}
