import Foundation
import FormSyncServer
import Testing

/// `formsync conformance` passes against the reference server, and fails against a server that
/// breaks the protocol (so its passes mean something).
struct ConformanceTests {
    @Test func theReferenceServerPassesEveryCheck() async throws {
        let world = try World()
        let result = try await ProcessRunner.run(
            DemoProcessTests.formsync, ["conformance", world.server.baseURL.absoluteString, "--refresh-token", world.refreshToken])
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        #expect(result.output.contains("0 failed"))
        #expect(!result.output.contains("FAIL"))
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
