import FieldForms
import FormSyncClient
import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import FormSyncTesting
import FormSyncTorture
import Foundation
import Synchronization
import Testing

@testable import FormSyncPostgres
@testable import FormSyncServer

/// Several server nodes on one PostgreSQL database: what one node began or issued, any other
/// finishes or honours, and the rules one process kept with its lock hold across processes.
/// (Each test makes its own database in the shared throwaway cluster.)
struct PostgresNodeTests {
    /// How many sessions of the current database wait for an advisory lock (the sequencer's).
    static let waitingLocks = """
        SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        """

    static func nodes(_ count: Int, url: String? = nil) throws -> (url: String, nodes: [SyncServer]) {
        let url = try url ?? PostgresCluster.shared().makeDatabase()
        let nodes = try (0..<count).map { _ in
            try TestStore.postgresServer(url: url, forms: FormCatalog.forms, records: FormCatalog.records)
        }
        return (url, nodes)
    }

    @Test func requestsRacingOneIdempotencyKeyOnTwoNodesApplyItOnce() async throws {
        try await OffThePool.run {
            let (_, nodes) = try Self.nodes(2)
            let token = try nodes[0].issueAccessToken(workspaces: ["acme"])
            for round in 0..<5 {
                let request = try ServerGroupCommitTests.order(round, token: token)
                let replies = Mutex<[HTTPResponse?]>([])
                let start = DispatchSemaphore(value: 0)
                let done = DispatchGroup()
                for n in 0..<12 {
                    done.enter()
                    Thread.detachNewThread {
                        start.wait()
                        let reply = nodes[n % 2].handle(request)
                        replies.withLock { $0.append(reply) }
                        done.leave()
                    }
                }
                for _ in 0..<12 { start.signal() }
                done.wait()
                let all = replies.withLock { $0 }
                let applied = all.filter { $0?.status == 201 && $0?.headers.contains { $0.0 == "Idempotent-Replayed" } == false }
                let replayed = all.filter { $0?.status == 201 && $0?.headers.contains { $0.0 == "Idempotent-Replayed" } == true }
                let inFlight = all.filter {
                    $0?.status == 409 && String(decoding: $0?.body ?? Data(), as: UTF8.self).contains("key-in-flight")
                }
                #expect(applied.count == 1, "round \(round): \(all.map { $0?.status ?? 0 })")
                #expect(applied.count + replayed.count + inFlight.count == 12, "round \(round): \(all.map { $0?.status ?? 0 })")
            }
            #expect(nodes[1].documents().count == 5)
            #expect(nodes[0].documents().allSatisfy { $0.appliedWrites == 1 })
        }
    }

    /// On PostgreSQL a write waits for the server once per round trip. A submission's claim
    /// of its key goes with the reads of its document (owner, row locked) and the token's check
    /// in one; its new id takes one, its rows and `COMMIT` one, its token's look-up one (none
    /// after a preflight looked it up). An edit reads nothing more either.
    @Test func aSubmissionWaitsForPostgreSQLFourTimesAndAnEditOfItAsOften() async throws {
        try await OffThePool.run {
            let (_, nodes) = try Self.nodes(1)
            let node = nodes[0]
            let token = try node.issueAccessToken(workspaces: ["acme"])
            func counted(_ request: HTTPRequest) -> (reply: HTTPResponse?, roundTrips: Int) {
                let counter = PostgresConnectionPool.RoundTripCounter()
                let reply = PostgresConnectionPool.$roundTripCounter.withValue(counter) { node.handle(request) }
                return (reply, counter.value)
            }
            var creates: [Int] = []
            var edits: [Int] = []
            // (The first ones prepare their statements on the connections they get.)
            for n in 0..<8 {
                let created = counted(try ServerGroupCommitTests.order(n, token: token))
                #expect(created.reply?.status == 201, "\(created.reply?.status ?? 0)")
                var edit = try ServerGroupCommitTests.order(n, token: token)
                edit.headers["idempotency-key"] = "edit-\(n)"
                edit.headers["if-match"] = created.reply?.headers.first { $0.0 == "ETag" }?.1
                let edited = counted(edit)
                #expect(edited.reply?.status == 200, "\(edited.reply?.status ?? 0)")
                if n >= 4 {
                    creates.append(created.roundTrips)
                    edits.append(edited.roundTrips)
                }
            }
            #expect(creates.min() == 4, "round trips of each submission: \(creates)")
            #expect(edits.min() == 4, "round trips of each edit: \(edits)")

            // Over HTTP the token was looked up by the preflight of the request's head: the
            // write takes that on and checks the token again in its claim's round trip.
            var noted: [Int] = []
            for n in 8..<12 {
                let created = counted(try Self.preflighted(try ServerGroupCommitTests.order(n, token: token), on: node))
                #expect(created.reply?.status == 201, "\(created.reply?.status ?? 0)")
                noted.append(created.roundTrips)
            }
            #expect(noted.min() == 3, "round trips of each submission after its preflight: \(noted)")
        }
    }

    /// `request` as an `HTTPServer` hands it to `node` once `node`'s preflight has seen its head.
    static func preflighted(_ request: HTTPRequest, on node: SyncServer) throws -> HTTPRequest {
        var head = request
        head.body = Data()
        guard case .read(_, let note) = ServerRouter(context: node.context).preflight(head) else {
            throw PreflightRefused()
        }
        var noted = request
        noted.preflightNote = note
        return noted
    }

    struct PreflightRefused: Error {}

    /// A device revoked on another node after its write's head was checked (while its body was
    /// on the way) has the write refused: the write's transaction checks the token again.
    @Test func aWriteWhoseDeviceIsRevokedOnAnotherNodeWhileItsBodyArrivesIsRefusedAndWritesNothing() async throws {
        try await OffThePool.run {
            let (_, nodes) = try Self.nodes(2)
            let van = try Self.enrol("ada", on: nodes[0], issuer: nodes[0])
            let office = try nodes[1].issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
            let before = try Self.preflighted(try ServerGroupCommitTests.order(1, token: van.accessToken), on: nodes[0])
            #expect(nodes[0].handle(before)?.status == 201, "a write whose token holds is taken")

            let request = try Self.preflighted(try ServerGroupCommitTests.order(2, token: van.accessToken), on: nodes[0])
            let revoked = nodes[1].handle(
                HTTPRequest(
                    method: "POST", path: "/auth/revocations", query: nil,
                    headers: ["authorization": "Bearer \(office)", "formsync-workspace": "acme", "content-type": "application/json"],
                    body: try JSONEncoder().encode(RevocationRequest(deviceID: van.deviceID, reason: "lost"))))
            #expect(revoked?.status == 200)
            let refused = nodes[0].handle(request)
            #expect(refused?.status == 401)
            #expect(
                (try? JSONSerialization.jsonObject(with: refused?.body ?? Data()) as? [String: Any])?["code"] as? String == "device-revoked"
            )
            #expect(nodes[1].documents().count == 1, "the refused write wrote nothing")
        }
    }

    /// What a preflight found of one token is never taken on for a request that carries
    /// another: forged, absurd or empty tokens behind a valid token's look-up are refused and
    /// write nothing.
    @Test func aPreflightsLookUpOfOneTokenIsNotTakenOnForARequestCarryingAnother() async throws {
        try await OffThePool.run {
            let (_, nodes) = try Self.nodes(1)
            let token = try nodes[0].issueAccessToken(workspaces: ["acme"])
            let noted = try Self.preflighted(try ServerGroupCommitTests.order(1, token: token), on: nodes[0])
            #expect(noted.preflightNote != nil, "the preflight noted its look-up")
            for forged in ["a-unknown", "", String(repeating: "x", count: 600), "a-\u{0}", "' OR 1=1 --", token + "x"] {
                var request = noted
                request.headers["authorization"] = "Bearer \(forged)"
                #expect(nodes[0].handle(request)?.status == 401, "\(forged.prefix(20))")
            }
            #expect(nodes[0].documents().isEmpty)
            // Another principal's valid token is looked up for itself: the write is that principal's.
            var other = noted
            other.headers["authorization"] = "Bearer \(try nodes[0].issueAccessToken(principal: "bob", workspaces: ["acme"]))"
            #expect(nodes[0].handle(other)?.status == 201)
            let document = try #require(noted.header("formsync-document"))
            #expect(nodes[0].context.store.owner(of: document)?.principal == "bob")
        }
    }

    /// A device enrolled for `principal` through `node`, with a code `issuer` made.
    static func enrol(_ principal: String, on node: SyncServer, issuer: SyncServer) throws -> Credentials {
        let made = try issuer.makeEnrolment(principal: principal, workspace: "acme")
        let body = try JSONEncoder().encode(
            EnrolRequest(code: made.code.description, installation: "install-\(principal)", device: DeviceReport(name: principal)))
        let reply = node.handle(
            HTTPRequest(method: "POST", path: "/auth/enrol", query: nil, headers: ["content-type": "application/json"], body: body))
        try #require(reply?.status == 201)
        return try JSONDecoder().decode(Credentials.self, from: reply?.body ?? Data())
    }

    @Test func aKeyHeldByOneNodeIsInFlightOnAnotherAndReplayedThere() async throws {
        try await OffThePool.run {
            let (_, nodes) = try Self.nodes(2)
            let token = try nodes[0].issueAccessToken(workspaces: ["acme"])
            let request = try ServerGroupCommitTests.order(7, token: token)
            nodes[0].faults.add(.hold, count: 1, target: .submissions)
            let first = Mutex<HTTPResponse?>(nil)
            let finished = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                first.withLock { $0 = nodes[0].handle(request) }
                finished.signal()
            }
            #expect(nodes[0].faults.waitUntilHolding(1))
            let meanwhile = nodes[1].handle(request)
            nodes[0].faults.releaseHeld()
            #expect(meanwhile?.status == 409)
            #expect(meanwhile?.headers.contains { $0 == ("Retry-After", "1") } == true)
            finished.wait()
            #expect(first.withLock { $0?.status } == 201)
            let later = nodes[1].handle(request)
            #expect(later?.status == 201)
            #expect(later?.headers.contains { $0.0 == "Idempotent-Replayed" } == true)
            #expect(later?.body == first.withLock { $0?.body })
            #expect(nodes[1].documents().count == 1)
        }
    }

    /// A sequence number taken at insert time is not commit order: here the change written
    /// first commits last, after a device's cursor passed the change written second.
    @Test func aChangeThatCommitsLateIsNeverSkippedByACursorThatPassedIt() async throws {
        try await OffThePool.run {
            let url = try PostgresCluster.shared().makeDatabase()
            let early = try PostgresServerStore(url: url, migrate: true, now: 0)
            let late = try PostgresServerStore(url: url, migrate: false, now: 0)
            let reader = try PostgresServerStore(url: url, migrate: false, now: 0)
            let written = DispatchSemaphore(value: 0)
            let commit = DispatchSemaphore(value: 0)
            let committed = DispatchSemaphore(value: 0)
            let customer = Data(#"{"name":"Written first","segment":"retail"}"#.utf8)
            Thread.detachNewThread {
                do {
                    try early.transaction {
                        _ = try early.putRecord(workspace: "acme", type: "Customer", id: 1, scope: "", payload: customer, files: [], at: 0)
                        written.signal()
                        commit.wait()
                    }
                } catch {
                    Issue.record("the early transaction failed: \(error)")
                }
                committed.signal()
            }
            written.wait()
            _ = try late.putRecord(
                workspace: "acme", type: "Customer", id: 2, scope: "",
                payload: Data(#"{"name":"Committed first","segment":"retail"}"#.utf8),
                files: [], at: 0)
            let first = try reader.feed(workspace: "acme", principal: "ada", after: 0, limit: 100)
            #expect(first.map(\.id) == [2], "only the committed change is in the feed")
            let cursor = try #require(first.last?.seq)
            commit.signal()
            committed.wait()
            let next = try reader.feed(workspace: "acme", principal: "ada", after: cursor, limit: 100)
            #expect(next.map(\.id) == [1], "the change that committed late comes after the cursor, not before it")
            #expect(try reader.feed(workspace: "acme", principal: "ada", after: 0, limit: 100).map(\.id) == [2, 1])
        }
    }

    /// A write does not wait for the feed's sequencer: here another session holds the
    /// sequencer's lock, the write is answered anyway with its change unnumbered, and the pass it
    /// asked for numbers it once the holder lets go, with nobody reading the feed.
    @Test func aWriteIsAnsweredWhileTheSequencerIsHeldAndItsChangeIsNumberedWhenTheHolderLetsGo() async throws {
        try await OffThePool.run {
            let url = try PostgresCluster.shared().makeDatabase()
            let store = try PostgresServerStore(url: url, migrate: true, now: 0)
            let holder = try PostgresConnection(url: url)
            let watcher = try PostgresConnection(url: url)
            try holder.run("BEGIN")
            try holder.query("SELECT pg_advisory_xact_lock($1)", [.integer(PostgresServerStore.sequencerLock)])
            let payload = Data(#"{"name":"Held","segment":"retail"}"#.utf8)
            try store.transaction {
                _ = try store.putRecord(workspace: "acme", type: "Customer", id: 1, scope: "", payload: payload, files: [], at: 0)
            }
            let unnumbered = "SELECT COUNT(*) FROM changes WHERE seq IS NULL"
            #expect(try watcher.query(unnumbered).int(0, 0) == 1, "the write was answered before its change was numbered")
            // The pass the write asked for is waiting for the lock (a write that ran the sequencer
            // itself would have given up on it by now, and nothing would be waiting).
            while try watcher.query(Self.waitingLocks).int(0, 0) == 0 { usleep(5_000) }
            try holder.run("COMMIT")
            while try watcher.query(unnumbered).int(0, 0) != 0 { usleep(5_000) }
            #expect(try watcher.query("SELECT seq FROM changes").int(0, 0) == 1)
        }
    }

    @Test func aCursorAtTheFeedsEndStaysValidWhileItsRecordIsWrittenAgainAndNotYetNumbered() async throws {
        try await OffThePool.run {
            let (url, nodes) = try Self.nodes(1)
            let node = nodes[0]
            let token = try node.issueAccessToken(workspaces: ["acme"])
            /// A page's changes (id and version) and cursor.
            func read(_ reply: HTTPResponse?) throws -> (changes: [(id: Int64, version: Int)], cursor: String) {
                let body = try #require(reply?.body)
                let json = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
                let changes = (json[FeedPage.changes] as? [[String: Any]] ?? []).map {
                    (($0[FeedPage.Change.id] as? NSNumber)?.int64Value ?? 0, ($0[FeedPage.Change.version] as? NSNumber)?.intValue ?? 0)
                }
                return (changes, try #require(json[FeedPage.cursor] as? String))
            }
            @Sendable func page(after cursor: String?) -> HTTPResponse? {
                node.handle(
                    HTTPRequest(
                        method: "GET", path: "/changes", query: cursor.map { "cursor=\($0)" },
                        headers: ["authorization": "Bearer \(token)", ProtocolHeader.workspace.lowercased(): "acme"], body: Data()))
            }
            let record = try node.putRecord(Customer(name: "First", segment: .retail), workspace: "acme")
            let first = try read(page(after: nil))
            #expect(first.changes.map(\.id) == [record.id])
            // The record is written again while the sequencer is held: its change waits unnumbered.
            let holder = try PostgresConnection(url: url)
            try holder.run("BEGIN")
            try holder.query("SELECT pg_advisory_xact_lock($1)", [.integer(PostgresServerStore.sequencerLock)])
            _ = try node.putRecord(
                "Customer", id: record.id, fields: try FormRegistry.encode(Customer(name: "Second", segment: .retail)), workspace: "acme")
            let reply = Mutex<HTTPResponse?>(nil)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                let answer = page(after: first.cursor)
                reply.withLock { $0 = answer }
                done.signal()
            }
            // The pull waits for the numbering beside the write's own pass (two waiting for the
            // lock), or was answered at once.
            let watcher = try PostgresConnection(url: url)
            while reply.withLock({ $0 == nil }), (try watcher.query(Self.waitingLocks).int(0, 0) ?? 0) < 2 { usleep(5_000) }
            try holder.run("COMMIT")
            done.wait()
            let answer = try #require(reply.withLock { $0 })
            #expect(
                answer.status == 200, "a cursor the feed gave is not \"ahead of the feed\": \(String(decoding: answer.body, as: UTF8.self))"
            )
            let next = try read(answer)
            #expect(next.changes.map(\.id) == [record.id] && next.changes.first?.version == 2)
        }
    }

    @Test func submissionsAcceptedOnBothNodesAppearOnceEachInTheFeedReadFromEither() async throws {
        try await OffThePool.run {
            let (_, nodes) = try Self.nodes(2)
            let token = try nodes[0].issueAccessToken(workspaces: ["acme"])
            let office = try nodes[1].issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
            let done = DispatchGroup()
            for n in 0..<24 {
                done.enter()
                Thread.detachNewThread {
                    let reply = try? nodes[n % 2].handle(ServerGroupCommitTests.order(n, token: token))
                    if reply?.status != 201 { Issue.record("order \(n): \(reply?.status ?? 0)") }
                    done.leave()
                }
            }
            done.wait()
            for reader in nodes {
                var seen: [String] = []
                var cursor = ""
                var pages = 0
                while pages < 30 {
                    let reply = reader.handle(
                        HTTPRequest(
                            method: "GET", path: "/submissions", query: "limit=5" + (cursor.isEmpty ? "" : "&cursor=\(cursor)"),
                            headers: ["authorization": "Bearer \(office)", "formsync-workspace": "acme"], body: Data()))
                    let page = try JSONDecoder().decode(SubmissionsPage.self, from: try #require(reply?.body))
                    seen += page.submissions.map(\.documentID)
                    cursor = page.cursor
                    pages += 1
                    if !page.more { break }
                }
                #expect(seen.count == 24 && Set(seen) == Set((0..<24).map { "d-\($0)" }), "each once: \(seen)")
            }
        }
    }

    @Test func aDocumentEventThatCommitsLateIsNeverSkippedByASubmissionsCursorThatPassedIt() async throws {
        try await OffThePool.run {
            let url = try PostgresCluster.shared().makeDatabase()
            let early = try PostgresServerStore(url: url, migrate: true, now: 0)
            let late = try PostgresServerStore(url: url, migrate: false, now: 0)
            let reader = try PostgresServerStore(url: url, migrate: false, now: 0)
            @Sendable func event(_ document: String) -> StoredDocumentEvent {
                StoredDocumentEvent(
                    workspace: "acme", documentID: document, entityID: 1, form: "SalesOrder", formVersion: 1, event: .accepted, version: 1,
                    payload: Data("{}".utf8),
                    author: Authorship(principal: "ada", device: nil, at: 0, capturedAt: nil, via: .submission, documentID: document),
                    review: nil, owner: "ada")
            }
            let written = DispatchSemaphore(value: 0)
            let commit = DispatchSemaphore(value: 0)
            let committed = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                do {
                    try early.transaction {
                        _ = try early.addDocumentEvent(event("written-first"))
                        written.signal()
                        commit.wait()
                    }
                } catch {
                    Issue.record("the early transaction failed: \(error)")
                }
                committed.signal()
            }
            written.wait()
            _ = try late.transaction { try late.addDocumentEvent(event("committed-first")) }
            func read(after cursor: Int64) throws -> [StoredDocumentEvent] {
                try reader.submissionEvents(workspace: "acme", after: cursor, form: nil, since: nil, until: nil, limit: 100)
            }
            let first = try read(after: 0)
            #expect(first.map(\.documentID) == ["committed-first"], "only the committed event is in the feed")
            let cursor = try #require(first.last?.seq)
            commit.signal()
            committed.wait()
            #expect(try read(after: cursor).map(\.documentID) == ["written-first"], "the late event comes after the cursor")
            #expect(try read(after: 0).map(\.documentID) == ["committed-first", "written-first"])
        }
    }

    @Test func aDeviceRevokedOnOneNodeIsRefusedOnEveryNodeWhileItsUploadIsMidway() async throws {
        try await OffThePool.run {
            let (_, nodes) = try Self.nodes(2)
            func send(_ node: Int, _ method: String, _ path: String, headers: [String: String] = [:], body: Data = Data()) -> HTTPResponse?
            {
                nodes[node].handle(HTTPRequest(method: method, path: path, query: nil, headers: headers, body: body))
            }
            func code(_ reply: HTTPResponse?) -> String? {
                (try? JSONSerialization.jsonObject(with: reply?.body ?? Data()) as? [String: Any])?["code"] as? String
            }
            let van = try Self.enrol("ada", on: nodes[1], issuer: nodes[0])
            let other = try Self.enrol("bob", on: nodes[0], issuer: nodes[0])
            let office = try nodes[1].issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)

            // The upload begins on node 0 and takes its first half on node 1.
            let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
            let headers = ["authorization": "Bearer \(van.accessToken)", "formsync-workspace": "acme"]
            let created = send(
                0, "POST", "/uploads",
                headers: headers.merging([
                    "formsync-document": "photo-ada", "upload-length": "\(bytes.count)",
                    "repr-digest": "sha-256=:\(SHA256.hash(bytes).base64EncodedString()):",
                ]) { $1 })
            #expect(created?.status == 201)
            let location = try #require(created?.headers.first { $0.0 == "Location" }?.1)
            let half = bytes.count / 2
            let appended = send(
                1, "PATCH", location, headers: headers.merging(["upload-offset": "0", "upload-complete": "?0"]) { $1 },
                body: bytes.prefix(half))
            #expect(appended?.status == 204)

            // The back office revokes the device through node 0 while the upload is half-way.
            let revoked = send(
                0, "POST", "/auth/revocations",
                headers: ["authorization": "Bearer \(office)", "formsync-workspace": "acme", "content-type": "application/json"],
                body: try JSONEncoder().encode(RevocationRequest(deviceID: van.deviceID, reason: "lost")))
            #expect(revoked?.status == 200)

            // Its next request is refused on every node: the append, the offset, a refresh.
            let next = send(
                1, "PATCH", location, headers: headers.merging(["upload-offset": "\(half)", "upload-complete": "?1"]) { $1 },
                body: bytes.suffix(from: half))
            #expect(next?.status == 401 && code(next) == "device-revoked")
            #expect(code(send(0, "HEAD", location, headers: headers)) == "device-revoked")
            let refresh = try JSONEncoder().encode(RefreshRequest(refreshToken: van.refreshToken))
            for node in 0..<2 {
                #expect(
                    code(send(node, "POST", "/auth/refresh", headers: ["content-type": "application/json"], body: refresh))
                        == "device-revoked")
            }
            #expect(nodes[0].fileIDs().isEmpty, "the upload never finished")
            // Another device of the workspace carries on, on both nodes.
            let otherHeaders = ["authorization": "Bearer \(other.accessToken)", "formsync-workspace": "acme"]
            for node in 0..<2 { #expect(send(node, "GET", "/changes", headers: otherHeaders)?.status == 200) }
        }
    }

    @Test func aSupportRequestMadeThroughOneNodeReachesItsDeviceThroughAnotherAndItsAnswerIsReadOnBoth() async throws {
        try await OffThePool.run {
            let (_, nodes) = try Self.nodes(2)
            func send(
                _ node: Int, _ method: String, _ path: String, query: String? = nil, token: String, body: Data = Data()
            )
                -> HTTPResponse?
            {
                nodes[node].handle(
                    HTTPRequest(
                        method: method, path: path, query: query,
                        headers: ["authorization": "Bearer \(token)", "formsync-workspace": "acme", "content-type": "application/json"],
                        body: body))
            }
            let made = try nodes[0].makeEnrolment(principal: "ada", workspace: "acme")
            let enrol = nodes[1].handle(
                HTTPRequest(
                    method: "POST", path: "/auth/enrol", query: nil, headers: ["content-type": "application/json"],
                    body: try JSONEncoder().encode(
                        EnrolRequest(code: made.code.description, installation: "install-ada", device: DeviceReport(name: "Van 12")))))
            let van = try JSONDecoder().decode(Credentials.self, from: try #require(enrol?.body))
            let office = try nodes[0].issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
            let asked = send(
                0, "POST", "/support/requests", token: office, body: try JSONEncoder().encode(SupportRequestCreate(deviceID: van.deviceID)))
            let request = try JSONDecoder().decode(SupportRequest.self, from: try #require(asked?.body))
            let page = try #require(send(1, "GET", "/changes", token: van.accessToken)?.body)
            let carried = (try JSONSerialization.jsonObject(with: page) as? [String: Any])?[FeedPage.supportRequest] as? [String: Any]
            #expect((carried?["id"] as? NSNumber)?.int64Value == request.id, "node 1's feed carries node 0's request")
            let bundle = SupportBundle(
                createdAt: "2026-12-06T10:00:00Z", answering: request.id, device: nil, outboxSchema: 12, workspaces: ["acme"],
                counts: [:], recordsHeld: 0, settings: [:], people: [], revoked: nil, includesPayloads: false, items: [])
            #expect(send(1, "POST", "/support/bundles", token: van.accessToken, body: try JSONEncoder().encode(bundle))?.status == 201)
            for node in 0..<2 {
                let list = try JSONDecoder().decode(
                    SupportBundleList.self, from: try #require(send(node, "GET", "/support/bundles", token: office)?.body))
                #expect(list.bundles.map(\.bundle.answering) == [request.id], "node \(node)")
                let again = try #require(send(node, "GET", "/changes", token: van.accessToken)?.body)
                #expect((try JSONSerialization.jsonObject(with: again) as? [String: Any])?[FeedPage.supportRequest] == nil)
            }
        }
    }

    @Test func twoNodesRefreshingOneDeviceAtOnceRotateItOnceAndRevokeNothing() async throws {
        try await OffThePool.run {
            let (_, nodes) = try Self.nodes(2)
            var token = try nodes[0].issueRefreshToken(principal: "ada", workspaces: ["acme"])
            for round in 0..<10 {
                let body = try JSONEncoder().encode(RefreshRequest(refreshToken: token))
                let replies = Mutex<[HTTPResponse?]>([])
                let done = DispatchGroup()
                for node in 0..<2 {
                    done.enter()
                    Thread.detachNewThread {
                        let reply = nodes[node].handle(
                            HTTPRequest(
                                method: "POST", path: "/auth/refresh", query: nil, headers: ["content-type": "application/json"], body: body
                            ))
                        replies.withLock { $0.append(reply) }
                        done.leave()
                    }
                }
                done.wait()
                let all = replies.withLock { $0 }
                #expect(all.map { $0?.status ?? 0 } == [200, 200], "round \(round)")
                // One reply rotated the token, the other answered it again as a retry of a reply
                // the device never read: the device holds whichever it reads, and only the later
                // one is good. Neither revokes it; the other is simply unknown.
                let issued = try all.map { try JSONDecoder().decode(Credentials.self, from: $0?.body ?? Data()).refreshToken }
                var next: String?
                var refusals: [String] = []
                for candidate in issued {
                    let probe = nodes[round % 2].handle(
                        HTTPRequest(
                            method: "POST", path: "/auth/refresh", query: nil, headers: ["content-type": "application/json"],
                            body: try JSONEncoder().encode(RefreshRequest(refreshToken: candidate))))
                    if probe?.status == 200 {
                        next = try JSONDecoder().decode(Credentials.self, from: probe?.body ?? Data()).refreshToken
                    } else {
                        refusals.append(
                            ((try? JSONSerialization.jsonObject(with: probe?.body ?? Data())) as? [String: Any])?["code"] as? String ?? "?")
                    }
                }
                #expect(refusals == ["bad-token"], "round \(round)")
                token = try #require(next, "round \(round): neither reply holds the device's token")
            }
            #expect(try nodes[1].devices(workspace: "acme").allSatisfy { $0.revokedAt == nil })
        }
    }

    @Test func anyNodeContinuesWhatAnotherBeganAndHonoursWhatItIssuedOrRevoked() async throws {
        try await OffThePool.run {
            let (_, nodes) = try Self.nodes(3)
            let refresh = try nodes[0].issueRefreshToken(principal: "ada", workspaces: ["acme"])
            // A refresh token issued by node 0, traded on node 1, used on node 2.
            let traded = nodes[1].handle(
                HTTPRequest(
                    method: "POST", path: "/auth/refresh", query: nil, headers: ["content-type": "application/json"],
                    body: Data(#"{"refresh_token":"\#(refresh)"}"#.utf8)))
            #expect(traded?.status == 200)
            let token = try #require(
                (try JSONSerialization.jsonObject(with: traded?.body ?? Data()) as? [String: Any])?["access_token"] as? String)
            #expect(nodes[2].handle(try ServerGroupCommitTests.order(1, token: token))?.status == 201)

            // A resumable upload begun on node 0, appended on node 1, finished on node 2.
            let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let digest = "sha-256=:\(SHA256.hash(bytes).base64EncodedString()):"
            let headers = ["authorization": "Bearer \(token)", "formsync-workspace": "acme"]
            let created = nodes[0].handle(
                HTTPRequest(
                    method: "POST", path: "/uploads", query: nil,
                    headers: headers.merging(["formsync-document": "photo-1", "upload-length": "\(bytes.count)", "repr-digest": digest]) {
                        $1
                    },
                    body: Data()))
            #expect(created?.status == 201)
            let location = try #require(created?.headers.first { $0.0 == "Location" }?.1)
            let half = bytes.count / 2
            let appended = nodes[1].handle(
                HTTPRequest(
                    method: "PATCH", path: location, query: nil,
                    headers: headers.merging(["upload-offset": "0", "upload-complete": "?0"]) { $1 }, body: bytes.prefix(half)))
            #expect(appended?.status == 204)
            let offset = nodes[2].handle(HTTPRequest(method: "HEAD", path: location, query: nil, headers: headers, body: Data()))
            #expect(offset?.headers.first { $0.0 == "Upload-Offset" }?.1 == "\(half)")
            let finished = nodes[2].handle(
                HTTPRequest(
                    method: "PATCH", path: location, query: nil,
                    headers: headers.merging(["upload-offset": "\(half)", "upload-complete": "?1"]) { $1 }, body: bytes.suffix(from: half)))
            #expect(finished?.status == 201)
            let fileID = try #require(nodes[0].fileIDs().first)
            #expect(nodes[1].fileBytes(fileID) == bytes)

            // The feed: a page from one node, the next page from another.
            for n in 0..<5 { _ = try nodes[n % 3].putRecord(Customer(name: "C\(n)", segment: .retail), workspace: "acme") }
            let feedHeaders = headers
            let page1 = nodes[0].handle(HTTPRequest(method: "GET", path: "/changes", query: "limit=3", headers: feedHeaders, body: Data()))
            let cursor = try #require(
                (try JSONSerialization.jsonObject(with: page1?.body ?? Data()) as? [String: Any])?["cursor"] as? String)
            let page2 = nodes[1].handle(
                HTTPRequest(method: "GET", path: "/changes", query: "cursor=\(cursor)&limit=100", headers: feedHeaders, body: Data()))
            let names = [page1, page2].flatMap { page -> [String] in
                let changes =
                    (try? JSONSerialization.jsonObject(with: page?.body ?? Data()) as? [String: Any])?["changes"] as? [[String: Any]] ?? []
                return changes.compactMap { ($0["record"] as? [String: Any])?["name"] as? String }
            }
            #expect(names.filter { $0.hasPrefix("C") }.sorted() == ["C0", "C1", "C2", "C3", "C4"])

            // A token revoked on node 0 is refused on node 1 at once: nodes cache no grant.
            #expect(nodes[1].handle(try ServerGroupCommitTests.order(2, token: token))?.status == 201)
            nodes[0].expireAccessTokens()
            #expect(nodes[1].handle(try ServerGroupCommitTests.order(3, token: token))?.status == 401)
        }
    }

    @Test func nodesStartingTogetherMigrateOnceAndANodeRefusesASchemaItDoesNotKnow() async throws {
        try await OffThePool.run {
            let url = try PostgresCluster.shared().makeDatabase()
            #expect(throws: PostgresSchema.Mismatch.self, "an empty database is not migrated without --migrate") {
                _ = try PostgresServerStore(url: url, migrate: false, now: 0)
            }
            let failures = Mutex<[String]>([])
            let done = DispatchGroup()
            for _ in 0..<4 {
                done.enter()
                Thread.detachNewThread {
                    do { _ = try PostgresServerStore(url: url, migrate: true, now: 0) } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                    done.leave()
                }
            }
            done.wait()
            #expect(failures.withLock { $0 }.isEmpty)
            let connection = try PostgresConnection(url: url)
            #expect(try connection.query("SELECT COUNT(*) FROM formsync_schema").int(0, 0) == Int64(PostgresSchema.latest))
            try connection.query(
                "INSERT INTO formsync_schema (version, name, applied_at) VALUES ($1, 'from the future', 0)",
                [.integer(Int64(PostgresSchema.latest + 1))])
            let refused = #expect(throws: PostgresSchema.Mismatch.self) { _ = try PostgresServerStore(url: url, migrate: true, now: 0) }
            #expect(refused?.description.contains("newer than this node knows") == true)
        }
    }
}

/// The schema a node migrates to keeps no index twice: a second index on the same columns
/// with the same predicate answers nothing the first does not, and every write pays for it.
struct PostgresSchemaIndexTests {
    @Test func noTwoIndexesOfTheSchemaCoverTheSameColumnsUnderTheSamePredicate() async throws {
        try await OffThePool.run {
            let url = try PostgresCluster.shared().makeDatabase()
            _ = try PostgresServerStore(url: url, migrate: true, now: 0)
            let twice = try PostgresConnection(url: url).query(
                """
                SELECT a.indexrelid::regclass::text || ' and ' || b.indexrelid::regclass::text
                FROM pg_index a JOIN pg_index b ON a.indrelid = b.indrelid AND a.indexrelid < b.indexrelid
                    AND a.indkey::text = b.indkey::text
                    AND COALESCE(pg_get_expr(a.indpred, a.indrelid), '') = COALESCE(pg_get_expr(b.indpred, b.indrelid), '')
                    AND COALESCE(pg_get_expr(a.indexprs, a.indrelid), '') = COALESCE(pg_get_expr(b.indexprs, b.indrelid), '')
                JOIN pg_class c ON c.oid = a.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public'
                """)
            #expect(twice.count == 0, "indexes twice: \((0..<twice.count).map { twice.text($0, 0) ?? "" })")
        }
    }
}

/// One append at a time per upload, across nodes, and a node that dies mid-append holds nothing.
struct PostgresAppendLockTests {
    @Test func anAppendHeldByANodeThatDiesIsFreeAtOnce() async throws {
        try await OffThePool.run {
            let url = try PostgresCluster.shared().makeDatabase()
            var first: PostgresServerStore? = try PostgresServerStore(url: url, migrate: true, now: 0)
            let second = try PostgresServerStore(url: url, migrate: false, now: 0)
            #expect(try first!.claimAppend("u-1", at: 0))
            #expect(try second.claimAppend("u-1", at: 0) == false, "another node's append holds it")
            #expect(try second.claimAppend("u-2", at: 0), "another upload is free")
            second.releaseAppend("u-2")
            // The first node goes away with its connections, as a killed process does. PostgreSQL
            // frees the lock when that backend has ended (a moment after the socket closed), not when
            // a lease runs out: asked again until it is free, for at most 10 s (a lease was 60 s).
            first = nil
            var freed = false
            for _ in 0..<200 where !freed {
                freed = try second.claimAppend("u-1", at: 0)
                if !freed { usleep(50_000) }
            }
            #expect(freed)
            second.releaseAppend("u-1")
            #expect(try second.claimAppend("u-1", at: 0), "released, it can be taken again")
        }
    }
}

/// Changes in seconds across nodes (issue 47): a device long-polling node B is answered by a
/// change node A commits, told through PostgreSQL's LISTEN/NOTIFY, not by its deadline.
struct PostgresLiveChangesTests {
    /// A node listens for the other nodes' changes once its listener is made (as the node
    /// starts), not a moment later: a request held right after the start hears of a change
    /// committed right after it was held.
    @Test func aNodeListensForOtherNodesChangesAsSoonAsItsListenerIsMade() async throws {
        let url = try PostgresCluster.shared().makeDatabase()
        let store = try PostgresServerStore(url: url, migrate: true, now: 0)
        let look = try PostgresConnection(url: url, timeoutSeconds: 5)
        let listener = try #require(store.changeListener { _ in })
        defer { listener.stop() }
        let listening = try look.query(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND query = $1",
            [.text("LISTEN \(PostgresServerStore.changeChannel)")])
        #expect(listening.int(0, 0) == 1)
    }

    @Test func aChangeCommittedOnNodeAAnswersADeviceLongPollingNodeB() async throws {
        let (_, nodes) = try PostgresNodeTests.nodes(2)
        for node in nodes { _ = try node.start() }
        defer { for node in nodes { node.stop() } }
        let b = nodes[1].feedWaiters
        b.maxWaitSeconds = 3_600
        let token = try nodes[0].issueAccessToken(principal: "ada", workspaces: ["acme"])
        let transport = HTTPTransport(workspace: "acme", baseURL: nodes[1].baseURL, timeout: .seconds(120)) { token }
        let outbox = try Outbox(
            path: FileManager.default.temporaryDirectory.appendingPathComponent("live-\(UUID().uuidString).sqlite").path,
            forms: FormCatalog.forms, records: FormCatalog.records, transport: transport)
        #expect(try await outbox.pull().caughtUp)
        for round in 1...3 {
            let held = Task { try await outbox.pull(wait: .seconds(100)) }
            try await LiveChangesTests.until { b.count == 1 }
            let delivery = try nodes[0].putRecord(
                Delivery(courierId: "ada", status: .assigned, stopOrder: round, address: "Rua \(round)"), workspace: "acme")
            let report = try await held.value
            #expect(report.upserted == 1, "round \(round)")
            #expect(try await outbox.record(Delivery.self, id: delivery.id)?.stopOrder == round)
            #expect(b.tally.answeredByChange == round && b.tally.answeredAtDeadline == 0, "round \(round): \(b.tally)")
        }
    }
}

/// PostgreSQL going away under a node: the node says so (503, transient) and never answers
/// anything a device would act on wrongly (a 401 would send it to refresh a token that is fine),
/// and it serves again once PostgreSQL is back, on new connections.
struct PostgresOutageTests {
    @Test func aNodeWhoseDatabaseIsDownAnswers503AndServesAgainWhenItIsBack() async throws {
        try await OffThePool.run {
            let cluster = try PostgresCluster()
            defer { cluster.destroy() }
            let node = try TestStore.postgresServer(url: try cluster.makeDatabase(), forms: FormCatalog.forms, records: FormCatalog.records)
            let token = try node.issueAccessToken(workspaces: ["acme"])
            let refresh = try node.issueRefreshToken(workspaces: ["acme"])
            #expect(node.handle(try ServerGroupCommitTests.order(1, token: token))?.status == 201)
            cluster.crash()
            let during = node.handle(try ServerGroupCommitTests.order(2, token: token))
            #expect(during?.status == 503, "\(String(decoding: during?.body ?? Data(), as: UTF8.self))")
            #expect(during?.headers.contains { $0.0 == "Retry-After" } == true)
            let refreshed = node.handle(
                HTTPRequest(
                    method: "POST", path: "/auth/refresh", query: nil, headers: ["content-type": "application/json"],
                    body: Data(#"{"refresh_token":"\#(refresh)"}"#.utf8)))
            #expect(refreshed?.status == 503, "a refresh token is not called unknown while the database is down")
            try cluster.start()
            #expect(node.handle(try ServerGroupCommitTests.order(2, token: token))?.status == 201)
            #expect(node.documents().count == 2)
            // Killed and back with nothing asked in between: the node's idle connections are dead,
            // which it finds out only by using one; the first read after is still answered.
            cluster.crash()
            try cluster.start()
            #expect(node.documents().count == 2, "a read on a connection PostgreSQL closed is run again on a new one")
        }
    }

    /// Issue 44, defect 8: with PostgreSQL killed under load, a few replies were `500`. Every
    /// route that reads or writes the store answers `503` with `Retry-After` while it is down.
    @Test func everyRouteOfANodeWhoseDatabaseIsDownAnswers503NotAnError() async throws {
        try await OffThePool.run {
            let cluster = try PostgresCluster()
            defer { cluster.destroy() }
            let node = try TestStore.postgresServer(url: try cluster.makeDatabase(), forms: FormCatalog.forms, records: FormCatalog.records)
            let token = try node.issueAccessToken(workspaces: ["acme"])
            let office = try node.issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
            #expect(node.handle(try ServerGroupCommitTests.order(1, token: token))?.status == 201)
            // Every token has been seen once, so the node's cache answers who is calling.
            func get(
                _ path: String, query: String? = nil, token: String, method: String = "GET", headers: [String: String] = [:]
            ) -> HTTPResponse? {
                node.handle(
                    HTTPRequest(
                        method: method, path: path, query: query,
                        headers: ["authorization": "Bearer \(token)", "formsync-workspace": "acme"].merging(headers) { _, new in new },
                        body: Data()))
            }
            for who in [token, office] { #expect(get("/changes", query: "limit=1", token: who)?.status == 200) }
            cluster.crash()
            let digest = String(repeating: "ab", count: 32)
            let requests: [(String, HTTPResponse?)] = [
                ("GET /changes", get("/changes", query: "limit=10", token: token)),
                ("GET /changes (back office)", get("/changes", query: "limit=10", token: office)),
                ("GET /records", get("/records/Customer/1", token: token)),
                ("GET /documents", get("/documents/order-1", token: token)),
                ("GET /files/<id>", get("/files/1", token: token)),
                ("GET /files/sha-256", get("/files/sha-256/\(digest)", token: token)),
                ("GET /pending-files", get("/pending-files", token: office)),
                (
                    "POST /uploads",
                    get(
                        "/uploads", token: token, method: "POST",
                        headers: [
                            "formsync-document": "upload-1", "upload-length": "10", "upload-complete": "?0", "idempotency-key": "u-1",
                            "repr-digest": "sha-256=:\(Data(repeating: 1, count: 32).base64EncodedString()):",
                        ])
                ),
                ("POST /orders", node.handle(try ServerGroupCommitTests.order(2, token: token))),
                ("GET /support/bundles", get("/support/bundles", token: office)),
                (
                    "POST /support/requests",
                    node.handle(
                        HTTPRequest(
                            method: "POST", path: "/support/requests", query: nil,
                            headers: ["authorization": "Bearer \(office)", "formsync-workspace": "acme"],
                            body: try JSONEncoder().encode(SupportRequestCreate(deviceID: "dv-1"))))
                ),
            ]
            for (what, reply) in requests {
                #expect(reply?.status == 503, "\(what): \(String(decoding: reply?.body ?? Data(), as: UTF8.self))")
                #expect(reply?.headers.contains { $0.0 == "Retry-After" } == true, "\(what)")
            }
            try cluster.start()
            #expect(get("/changes", query: "limit=10", token: token)?.status == 200)
        }
    }

    /// What a store failure is answered with: `503` and `Retry-After` when the database cannot
    /// answer now (a connection lost, PostgreSQL shutting down, a serialization failure, a lock
    /// not granted), `500` for anything else, with its details in the log only.
    @Test func aLostConnectionIsA503AndAnyOtherStoreFailureA500() async throws {
        try await OffThePool.run { try Self.lostConnectionReplies() }
    }

    static func lostConnectionReplies() throws {
        let cluster = try PostgresCluster()
        defer { cluster.destroy() }
        let node = try TestStore.postgresServer(url: try cluster.makeDatabase(), forms: FormCatalog.forms, records: FormCatalog.records)
        for state in ["08006", "08001", "57P01", "40001", "40P01", "55P03", nil] {
            let reply = ServerRouter(context: node.context).failure(PostgresError(sqlState: state, message: "gone", statement: "SELECT 1"))
            #expect(reply.status == 503, "\(state ?? "no SQLSTATE")")
            #expect(reply.headers.contains { $0.0 == "Retry-After" })
        }
        for state in ["42P01", "23505", "22P02"] {
            let reply = ServerRouter(context: node.context).failure(
                PostgresError(sqlState: state, message: "SELECT secret FROM x", statement: "SELECT secret"))
            #expect(reply.status == 500, "\(state)")
            #expect(!String(decoding: reply.body, as: UTF8.self).contains("secret"), "no SQL reaches the client")
        }
    }
}
