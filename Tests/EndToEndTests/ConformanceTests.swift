import FieldForms
import FormSyncHTTP
import FormSyncServer
import FormSyncTesting
import FormSyncTorture
import Foundation
import Testing

/// `formsync conformance` passes against the reference server, and fails against a server that
/// breaks the protocol (so its passes mean something).
struct ConformanceTests {
    /// The rules no check covers against the example specs, each for its stated reason.
    static let uncoveredWithExamples: Set<String> = [
        "a head or body that takes too long is 408",
        "past the open-connection limit, with none idle, a connection is answered 503 with Retry-After",
        "an unfinished upload with no append for 24 hours expires (404 no-such-upload)",
        "a server stores only digests of its tokens, in files only its owner reads",
        "a key is kept at least 30 days",
        "a record deleted or moved out of a scope is a removal (deleted: true) in that scope's feed",
        "a create whose record would break the record's rules is 422 invalid-record, nothing created",
        "a key still in flight is 409 key-in-flight with Retry-After",
        "a server that does not list deferred-files in /health refuses a pending file with 422",
        "an expired code is 401 enrolment-expired",
    ]

    /// The checker's bounds, out of the way of a server on a loaded machine: these tests are
    /// about what the server answers, not how soon (the tests of the bounds set their own).
    static let patient = ["--timeout", "120", "--max-time", "3600"]

    static func notChecked(_ output: String) -> Set<String> {
        Set(
            output.split(separator: "\n").filter { $0.hasPrefix("not checked  ") }.compactMap { line -> String? in
                let rest = line.dropFirst("not checked  ".count)
                guard let start = rest.range(of: ": ") else { return nil }
                let text = rest[start.upperBound...]
                return Self.uncoveredWithExamples.first { text.hasPrefix($0) } ?? String(text.prefix(60))
            })
    }

    @Test func theReferenceServerPassesEveryCheckAndEachRuleIsNamedByItsSection() async throws {
        let world = try World()
        let other = try world.server.issueAccessToken(principal: "someone-else", workspaces: World.workspaces)
        let office = try world.server.issueAccessToken(principal: "office", workspaces: World.workspaces, role: .backOffice)
        // Webhooks go out as `formsync serve` sends them: in the background.
        world.server.webhooks.start(interval: 0.2)
        // Records the example forms refer to, as a back office would have made them.
        _ = try world.server.putRecord(Technician(name: "Tess"), workspace: "conformance")
        _ = try world.server.putRecord(
            Delivery(courierId: "default", status: .assigned, stopOrder: 1, address: "Rua 1"), workspace: "conformance")
        let result = try await ProcessRunner.run(
            DemoProcessTests.formsync,
            [
                "conformance", world.server.baseURL.absoluteString, "--refresh-token", world.refreshToken, "--other-token", other,
                "--back-office-token", office,
            ] + Self.patient)
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        #expect(result.output.contains("pass  §2 POST <form endpoint>: a payload of an older form version is accepted"), "\(result.output)")
        #expect(result.output.contains(" 0 failed"))
        #expect(!result.output.contains("FAIL"))
        // The wall, route by route: 7 routes × no header, a foreign workspace, another principal
        // (and what its reply carries), the back office.
        let wall = result.output.split(separator: "\n").filter { $0.hasPrefix("pass  §2 Access rules: ") }
        #expect(wall.count == 7 * 5, "\(wall.count) access checks passed")
        #expect(
            result.output.contains(
                "pass  §2 Access rules: another principal of the workspace reaches none of a principal's documents, files and uploads (GET /documents/<document id>)"
            ))
        // Every line of a verdict names its section of PROTOCOL.md.
        for line in result.output.split(separator: "\n") where line.hasPrefix("pass  ") {
            #expect(line.dropFirst(6).hasPrefix("§"), "\(line)")
        }
        #expect(Self.notChecked(result.output) == Self.uncoveredWithExamples, "\(result.output)")
        let passed = result.output.split(separator: "\n").filter { $0.hasPrefix("pass  ") }.count
        #expect(passed >= 95, "\(passed) checks passed")
        print(
            "conformance, reference server on \(TestStore.isPostgres ? "PostgreSQL" : "SQLite"): \(result.output.split(separator: "\n").last ?? "")"
        )
    }

    @Test func aServerWithoutDeferredFilesPassesByRefusingThem() async throws {
        let world = try World()
        world.server.acceptsDeferredFiles = false
        let result = try await ProcessRunner.run(
            DemoProcessTests.formsync,
            ["conformance", world.server.baseURL.absoluteString, "--refresh-token", world.refreshToken] + Self.patient)
        #expect(result.status == 0, "\(result.output)")
        #expect(
            result.output.contains(
                "pass  §2 Deferred files: a server that does not list deferred-files in /health refuses a pending file with 422"),
            "\(result.output)")
        #expect(result.output.contains("not checked  §2 Deferred files: a submission naming a file by digest"))
    }

    @Test func everyNodeOfAClusterOnPostgreSQLPassesEveryCheck() async throws {
        let (_, nodes) = try PostgresNodeTests.nodes(2)
        for node in nodes {
            _ = try node.start()
            node.webhooks.start(interval: 0.2)
        }
        defer { for node in nodes { node.stop() } }
        let refresh = try nodes[0].issueRefreshToken(workspaces: World.workspaces)
        let other = try nodes[1].issueAccessToken(principal: "someone-else", workspaces: World.workspaces)
        let office = try nodes[0].issueAccessToken(principal: "office", workspaces: World.workspaces, role: .backOffice)
        _ = try nodes[1].putRecord(Technician(name: "Tess"), workspace: "conformance")
        _ = try nodes[0].putRecord(
            Delivery(courierId: "default", status: .assigned, stopOrder: 1, address: "Rua 1"), workspace: "conformance")
        for (index, node) in nodes.enumerated() {
            let result = try await ProcessRunner.run(
                DemoProcessTests.formsync,
                [
                    "conformance", node.baseURL.absoluteString, "--refresh-token", refresh, "--other-token", other, "--back-office-token",
                    office,
                ] + Self.patient)
            #expect(result.status == 0, "node \(index): \(result.output)")
            #expect(result.output.contains(" 0 failed"), "node \(index)")
            let passed = result.output.split(separator: "\n").filter { $0.hasPrefix("pass  ") }.count
            #expect(passed >= 95, "node \(index): \(passed) checks passed")
            #expect(Self.notChecked(result.output) == Self.uncoveredWithExamples, "node \(index): \(result.output)")
            print("conformance, node \(index) of a PostgreSQL cluster: \(result.output.split(separator: "\n").last ?? "")")
        }
    }

    /// Another team's specs: the corpus forms (every field type, none of the examples), and the
    /// outside FieldApp's, whose one form names no string field conformance could mark with its
    /// run (the document-form check read the run id in the document id as the other record).
    @Test(arguments: [
        ("Tests/CorpusForms", "note  documents are checked with NewPlate", 60),
        ("Examples/FieldApp/Specs", "note  documents are checked with PestControlVisit", 60),
    ])
    func aServerOfAnotherTeamsFormsIsCheckedWithThoseForms(_ specs: String, _ note: String, _ least: Int) async throws {
        try await OffThePool.run {
            // `formsync serve --specs` serves the forms, and conformance makes its payloads from
            // the same specs.
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-specs-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let process = try ChildProcess(
                DemoProcessTests.formsync.path,
                ["serve", "--port", "0", "--db", folder.path, "--workspace", "conformance", "--specs", specs],
                standardOutput: .pipe, standardError: .discard)
            defer {
                process.signal()
                process.waitUntilExit()
            }
            try #require(process.output != nil)
            // The whole banner, to its last line: the server has started (and issued its tokens).
            let text = process.readOutput(until: "access token:")
            let lines = text.split(separator: "\n")
            let port = try #require(
                lines.first { $0.hasPrefix("FormSync reference server on") }?.split(separator: ":").last.flatMap { UInt16($0) }, "\(text)")
            let token = try #require(lines.first { $0.hasPrefix("access token:") }?.split(separator: " ").last.map(String.init), "\(text)")
            let result = try await ProcessRunner.run(
                DemoProcessTests.formsync,
                ["conformance", "http://127.0.0.1:\(port)", "--token", token, "--workspace", "conformance", "--specs", specs]
                    + Self.patient)
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains(note), "\(result.output)")
            #expect(!result.output.contains("NewCustomer"))
            let passed = result.output.split(separator: "\n").filter { $0.hasPrefix("pass  ") }.count
            #expect(passed >= least, "\(passed) checks passed:\n\(result.output)")
            print("conformance, a server of \(specs): \(result.output.split(separator: "\n").last ?? "")")
        }
    }

    @Test func withoutTheOtherTokensTheWallBetweenPrincipalsIsListedAsNotChecked() async throws {
        let world = try World()
        let result = try await ProcessRunner.run(
            DemoProcessTests.formsync,
            ["conformance", world.server.baseURL.absoluteString, "--refresh-token", world.refreshToken] + Self.patient)
        #expect(result.status == 0, "\(result.output)")
        #expect(
            result.output.contains(
                "not checked  §2 Access rules: the back office reaches every document, file and upload of its workspace: give --other-token"
            ))
    }

    @Test func theListNamesEveryRuleBySectionAndWhatNoCheckCovers() async throws {
        let result = try await ProcessRunner.run(DemoProcessTests.formsync, ["conformance", "--list"])
        #expect(result.status == 0)
        for section in [
            "§1 Syntax of what the client sends", "§2 POST <form endpoint>", "§2 Resumable uploads", "§2 Access rules",
            "§3 The idempotency ledger", "§6 Field errors", "§2 Devices and credentials", "§2 Support bundles",
        ] {
            #expect(result.output.contains("\n\(section)\n") || result.output.hasPrefix("\(section)\n"), "\(section)")
        }
        let open = result.output.split(separator: "\n").filter { $0.contains("[not checked: ") }
        // (The refusal by a server without deferred files is checked only of such a server.)
        #expect(open.count == Self.uncoveredWithExamples.count - 1, "\(open)")
    }

    /// A server whose `/health` answers as FormSync's does and whose every other reply is
    /// `misbehave`'s.
    static func hostile(_ misbehave: @escaping @Sendable (Int32) -> Void) throws -> RawSocket.Server {
        let health = Data(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 49\r\n\r\n{\"service\":\"formsync\",\"status\":\"ok\",\"protocol\":1}"
                .utf8)
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
        let begun = RawSocket.CutShortCount()
        let cutShort = RawSocket.CutShortCount()
        let server = try Self.hostile { fd in
            begun.add()
            RawSocket.send(fd, Data("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{".utf8))
            RawSocket.trickle(fd, ticks: 600, cutShort: cutShort)
        }
        let bounded = try await ProcessRunner.run(
            DemoProcessTests.formsync, ["conformance", server.url.absoluteString, "--token", "t", "--timeout", "1", "--max-time", "4"])
        #expect(bounded.status == 1)
        #expect(bounded.output.contains("pass  §2 GET /health"))
        // Without the bounds each of its ~80 exchanges would wait a minute. Counted, not timed
        // (a busy machine stretches a run's wall time, never raises its counts): the run's bound
        // lets only the exchanges begun within its 4 s reach the server (13 on an idle machine;
        // without it, all 68), and each exchange's bound closes its trickle long before the
        // trickle's minute is up (without it, the first ran its whole minute).
        let trickles = begun.count
        #expect(trickles >= 1 && trickles <= 30, "\(trickles) exchanges reached the server after a 4 s bound on the run")
        #expect(try await cutShort.reaches(trickles, within: 30), "an exchange ran until its trickle ended")

        // A server that floods every reply but health with bytes that never end: each exchange
        // stops at its byte bound, and the run ends.
        let flood = try Self.hostile { fd in
            RawSocket.send(fd, Data("HTTP/1.1 200 OK\r\nX-Pad: 1\r\n".utf8))
            let chunk = Data(repeating: 0x61, count: 1 << 16)
            for _ in 0..<4096 { RawSocket.send(fd, chunk) }  // once the peer is gone, each send fails at once
        }
        let flooded = try await ProcessRunner.run(
            DemoProcessTests.formsync, ["conformance", flood.url.absoluteString, "--token", "t", "--timeout", "2", "--max-time", "20"])
        #expect(flooded.status == 1)
        #expect(flooded.output.contains("pass  §2 GET /health"))

        // A port where a socket accepts and never answers: one line, and the run stops.
        let silent = try RawSocket.Server()
        silent.start { fd in
            _ = RawSocket.readRequest(fd)
            Thread.sleep(forTimeInterval: 30)
        }
        let stopped = try await ProcessRunner.run(
            DemoProcessTests.formsync, ["conformance", silent.url.absoluteString, "--token", "t", "--timeout", "1"])
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
        #expect(result.output.contains("FAIL  §2 POST <form endpoint>: a create is acknowledged with 2xx JSON echoing the document id"))
        #expect(result.output.contains("FAIL  §1 Syntax of what the client sends: a write with a bad token is 401"))
    }

    @Test func usageMistakesExitTwo() async throws {
        let none = try await ProcessRunner.run(DemoProcessTests.formsync, ["conformance", "http://127.0.0.1:9"])
        #expect(none.status == 2)
        let ftp = try await ProcessRunner.run(DemoProcessTests.formsync, ["conformance", "ftp://example", "--token", "t"])
        #expect(ftp.status == 2)
    }
}
