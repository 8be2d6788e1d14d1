import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import FormSyncTesting
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A 50 MB video over a link that keeps dropping: a resumable upload continues from the
/// server's offset each time, never sends a finished range again, and the server stores the
/// file whose digest was announced.
struct ResumableUploadTests {
    /// A file of random bytes, filled eight at a time (a byte loop takes a minute in a debug build).
    static func randomFile(_ url: URL, bytes: Int) throws -> URL {
        var data = Data(count: bytes)
        var generator = SystemRandomNumberGenerator()
        data.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for index in words.indices { words[index] = generator.next() }
        }
        try MediaSignature.stamped(data, asFileNamed: url.lastPathComponent).write(to: url)
        return url
    }

    /// Captures an inspection whose walkthrough video is `video`, then flushes until both items
    /// are confirmed (at most 8 flushes); returns the outbox, its events since the capture, and
    /// how many flushes it took.
    static func captureAndFlush(_ world: World, video: URL, siteCode: String) async throws -> (Outbox, AsyncStream<SyncEvent>, Int) {
        let outbox = try world.device("tech")
        let placeholder = outbox.placeholderIDs.next()
        let inspection = SiteInspection(
            siteCode: siteCode, inspectorId: EntityRef(7), visitDate: LocalDate("2026-11-30"),
            location: GeoPoint(latitude: 38.7, longitude: -9.1), hazards: [.none],
            walkthroughVideo: FileRef(id: placeholder, contentType: "video/mp4"))
        try await outbox.enqueue(inspection, attachments: [.init(placeholder: placeholder, source: video, contentType: "video/mp4")])
        let events = outbox.events()
        var flushes = 0
        while await outbox.stateCounts()[.confirmed] != 2, flushes < 8 {
            _ = await outbox.flush()
            flushes += 1
        }
        return (outbox, events, flushes)
    }

    /// A reading's end: the file upload's acknowledgement (the inspection, sent with the video
    /// pending, is acknowledged first).
    static func fileDone() -> @Sendable (SyncEvent) -> Bool {
        let files = Mutex<Set<ItemID>>([])
        return { event in
            if case .attemptStarted(let item, .file, _, _) = event { files.withLock { _ = $0.insert(item) } }
            if case .attemptFinished(let item, .done, _, _, _, _) = event { return files.withLock { $0.contains(item) } }
            return false
        }
    }

    @Test func aFiftyMegabyteUploadInterruptedThreeTimesFinishesWithTheRightDigestAndNoRangeSentTwice() async throws {
        let world = try World()
        let size = 50 * 1_000_000
        let video = try Self.randomFile(world.directory.appendingPathComponent("walkthrough.mp4"), bytes: size)
        let digest = try SHA256.hash(fileAt: video.path)
        // The first three appends are committed by the server, and their replies are lost.
        world.server.faults.add(.dropAfterCommit, count: 3, target: .appends)
        let (outbox, events, flushes) = try await Self.captureAndFlush(world, video: video, siteCode: "LIS-0042")
        #expect(await outbox.stateCounts() == [.confirmed: 2])
        // Three interruptions, then the rest. On a loaded machine the client may also give up on
        // an append (5 s without a byte, say while the server checks the digest of 50 MB in a
        // debug build): the next attempt goes on from the server's offset, so the checks below
        // on what went over the wire hold however many attempts it took.
        #expect(flushes >= 4)

        let stored = try #require(world.server.fileIDs().first)
        let bytes = try #require(world.server.fileBytes(stored))
        #expect(bytes.count == size)
        #expect(SHA256.hash(bytes) == digest)
        // Every byte went over the wire exactly once: the dropped appends were not resent.
        let appends = world.server.requestLog().filter { $0.method == "PATCH" }
        #expect(appends.map(\.bodyBytes).reduce(0, +) == size)
        #expect(appends.filter { $0.status == nil }.count == 3)
        let held = try #require(world.server.documents().first)
        #expect(try JSONDecoder().decode(SiteInspection.self, from: held.payload).walkthroughVideo?.id == stored)

        let reading = await StreamReading.read(events, until: Self.fileDone())
        #expect(reading.reached)
        // At most one creation per attempt at the file, as the outbox announced them (a flush
        // may find the file still waiting out its backoff and make no attempt at it, and an
        // attempt whose look-up by digest timed out on a loaded machine makes none).
        let fileAttempts = reading.elements.filter { event in
            if case .attemptStarted(_, .file, _, _) = event { return true } else { return false }
        }.count
        let creations = world.server.requestLog().filter { $0.method == "POST" && $0.path == "/uploads" }.count
        #expect(fileAttempts >= 4)
        #expect(creations >= 4 && creations <= fileAttempts, "\(creations) creations in \(fileAttempts) attempts")

        // The progress the app saw went up to the whole file before the upload was done.
        let last = reading.elements.compactMap { event -> (Int64, Int64)? in
            if case .uploadProgress(_, let sent, let total) = event { return (sent, total) } else { return nil }
        }.last
        #expect(last?.0 == Int64(size) && last?.1 == Int64(size))
    }

    @Test func anUploadWhoseLastAppendsReplyWasLostReportsTheWholeFileWhenFoundFinished() async throws {
        // Three 4 MiB chunks, and every reply lost: the attempt after the last one learns from
        // the creation reply (200) that the server holds the whole file, and says so.
        let world = try World()
        let size = 9_000_000
        let video = try Self.randomFile(world.directory.appendingPathComponent("short.mp4"), bytes: size)
        world.server.faults.add(.dropAfterCommit, count: 3, target: .appends)
        let (outbox, events, _) = try await Self.captureAndFlush(world, video: video, siteCode: "LIS-0044")
        #expect(await outbox.stateCounts() == [.confirmed: 2])
        // The attempt after the lost replies finds the whole file by its digest, and sends none of it again.
        #expect(world.server.requestLog().filter { $0.method == "GET" && $0.path.hasPrefix("/files/sha-256/") }.last?.status == 200)
        #expect(world.server.requestLog().filter { $0.method == "PATCH" }.map(\.bodyBytes).reduce(0, +) == size)
        let reading = await StreamReading.read(events, until: Self.fileDone())
        #expect(reading.reached)
        guard case .uploadProgress(_, let sent, let total) = reading.elements.dropLast().last else {
            Issue.record("the upload's last event before it was done is not its progress: \(reading.elements.suffix(3))")
            return
        }
        #expect(sent == Int64(size) && total == Int64(size))
    }

    @Test func anUploadResumedOnAnotherDaySendsOnlyWhatTheServerLacks() async throws {
        // A device process dies mid-upload: a new transport, on a fresh outbox opened on the
        // same file, asks the server where it stands and sends the rest.
        let world = try World()
        let video = try Self.randomFile(world.directory.appendingPathComponent("video.mp4"), bytes: 20 * 1_000_000)
        world.server.faults.add(.dropAfterCommit, count: 1, target: .appends)
        world.server.faults.add(.dropAfterCommit, count: 1, target: .appends)
        let placeholder = try world.device("tech").placeholderIDs.next()
        let inspection = SiteInspection(
            siteCode: "LIS-0043", inspectorId: EntityRef(7), visitDate: LocalDate("2026-11-30"),
            location: GeoPoint(latitude: 38.7, longitude: -9.1), hazards: [.none],
            walkthroughVideo: FileRef(id: placeholder, contentType: "video/mp4"))
        try await world.device("tech").enqueue(
            inspection, attachments: [.init(placeholder: placeholder, source: video, contentType: "video/mp4")])
        _ = try await world.drain("tech", rounds: 6)
        #expect(world.server.requestLog().filter { $0.method == "PATCH" }.map(\.bodyBytes).reduce(0, +) == 20 * 1_000_000)
        #expect(world.server.documents().count == 1)
    }

    @Test func theServerRefusesAbsurdLengthsDigestsAndOffsets() async throws {
        let world = try World()
        let token = try world.server.issueAccessToken(workspaces: ["acme"])
        func call(_ method: String, _ path: String, _ headers: [String: String], body: Data? = nil) async throws -> (Int, [String: String])
        {
            var request = URLRequest(url: URL(string: world.server.baseURL.absoluteString + path)!)
            request.httpMethod = method
            request.httpBody = body
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue("acme", forHTTPHeaderField: "FormSync-Workspace")
            for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
            let (_, response) = try await URLSession.shared.data(for: request)
            let http = response as! HTTPURLResponse
            var lowered: [String: String] = [:]
            for (key, value) in http.allHeaderFields {
                if let key = key as? String, let value = value as? String { lowered[key.lowercased()] = value }
            }
            return (http.statusCode, lowered)
        }
        let digest = "sha-256=:\(SHA256.hash(Data("abc".utf8)).base64EncodedString()):"
        func create(_ length: String, digest: String = digest, document: String) async throws -> (Int, [String: String]) {
            try await call(
                "POST", "/uploads",
                ["Idempotency-Key": document, "FormSync-Document": document, "Upload-Length": length, "Repr-Digest": digest])
        }
        #expect(try await create("99999999999999999999", document: "u1").0 == 400)
        #expect(try await create("-3", document: "u2").0 == 400)
        #expect(try await create(String(5 << 30), document: "u3").0 == 413)
        #expect(try await create("3", digest: "sha-256=:AAAA:", document: "u4").0 == 400)
        let (status, headers) = try await create("3", document: "u5")
        #expect(status == 201)
        let location = try #require(headers["location"])
        // past the length
        #expect(try await call("PATCH", location, ["Upload-Offset": "0", "Upload-Complete": "?1"], body: Data("abcdef".utf8)).0 == 400)
        #expect(try await call("PATCH", location, ["Upload-Offset": "1e3"], body: Data("a".utf8)).0 == 400)
        #expect(try await call("PATCH", "/uploads/../files", ["Upload-Offset": "0"], body: Data("a".utf8)).0 != 201)
        #expect(try await call("PATCH", location, ["Upload-Offset": "0", "Upload-Complete": "?1"], body: Data("abc".utf8)).0 == 201)
        #expect(world.server.fileIDs().count == 1)
    }
}
