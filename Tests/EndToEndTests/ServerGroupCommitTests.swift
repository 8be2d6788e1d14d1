import FieldForms
import FormSyncHTTP
import FormSyncModel
import FormSyncSQLite
import FormSyncTesting
import Foundation
import Synchronization
import Testing

@testable import FormSyncServer

/// The reference server under concurrent writers: writes share fsyncs, and the reply written
/// around the stored payload says what the general one says.
struct ServerGroupCommitTests {
    @Test func theReplyWrittenAroundTheStoredPayloadParsesLikeTheGeneralOne() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fast-reply-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.path, forms: FormCatalog.forms)
        let payload = Data(#"{"a":[1,2.5,"x\"y"],"b":{"c":null,"d":"é/ü"}}"#.utf8)
        for documentID in ["plain", "quote\"back\\slash", "tab\tnew\nline\u{1}", "ünïcode/😀"] {
            let document = SyncServer.Document(
                documentID: documentID, id: 42, form: "SalesOrder", formVersion: 2, version: 7, payload: payload, appliedWrites: 1)
            let fast = SubmissionService(context: server.context).recordResponse(document, status: 201)
            let general: [String: Any] = [
                "document_id": documentID, "id": 42, "form": "SalesOrder", "form_version": 2, "version": "\"7\"",
                "record": try JSONSerialization.jsonObject(with: payload),
            ]
            let parsed = try #require(
                try JSONSerialization.jsonObject(with: fast.body) as? NSDictionary, "\(String(decoding: fast.body, as: UTF8.self))")
            #expect(parsed == general as NSDictionary, "\(documentID): \(String(decoding: fast.body, as: UTF8.self))")
            #expect(fast.status == 201)
            #expect(fast.headers.contains { $0.0 == "ETag" && $0.1 == "\"7\"" })
        }
    }

    @Test func concurrentWritesAreAllAnsweredAfterAnFsyncOfTheLog() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("group-commit-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.path, forms: FormCatalog.forms)
        let token = try server.issueAccessToken(workspaces: ["acme"])
        let count = 64
        let statuses = Mutex<[Int?]>([])
        await Self.onSixteenThreads(count) { n in
            let status = server.handle(try! Self.order(n, token: token))?.status
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0 } == Array(repeating: 201, count: count))
        #expect(server.documents().count == count)
        let fsyncs = server.sqliteStore.walSync.fsyncCount
        #expect(fsyncs >= 1, "every reply waited for an fsync of the log")
        #expect(fsyncs <= count)
    }

    @Test func writesBetweenTwoFsyncsShareOneCommitAndEveryReplyFollowsItsCommit() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("write-batches-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.path, forms: FormCatalog.forms)
        let token = try server.issueAccessToken(workspaces: ["acme"])
        let commitsBefore = server.sqliteStore.db.commitCount
        let count = 96
        let path = folder.appendingPathComponent("server.sqlite").path
        for n in count..<(count + 3) {
            #expect(server.handle(try Self.order(n, token: token))?.status == 201)
            let other = try SQLiteConnection(path: path)
            let rows = try other.query("SELECT COUNT(*) FROM documents WHERE document_id = ?", [.text("d-\(n)")]) { $0.int(0) }
            #expect(rows == [1], "a reply leaves only once its write is committed and on disk")
        }
        let seenElsewhere = Mutex<[Int]>([])
        await Self.onSixteenThreads(count) { n in
            #expect(server.handle(try! Self.order(n, token: token))?.status == 201)
            // Once its reply is out, another connection (another process) sees the write: it
            // was committed, not only written in the batch.
            let other = try! SQLiteConnection(path: path)
            let rows = try! other.query("SELECT COUNT(*) FROM documents WHERE document_id = ?", [.text("d-\(n)")]) { $0.int(0) }
            seenElsewhere.withLock { $0.append(Int(rows.first ?? 0)) }
        }
        #expect(seenElsewhere.withLock { $0 } == Array(repeating: 1, count: count))
        let commits = server.sqliteStore.db.commitCount - commitsBefore
        #expect(commits < UInt64(count), "\(count) writes from 16 threads shared commits (\(commits))")
        #expect(server.documents().count == count + 3)
    }

    @Test func aBatchThatSQLiteRolledBackFailsTheRepliesThatDependedOnItAndItsNumberIsNeverReused() async throws {
        try await OffThePool.run {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lost-batch-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let store = try SQLiteServerStore(directory: folder.path, now: 0)
            let floor = store.batches.committedNumber + 1
            _ = try store.batches.batched {
                try store.createDocument(
                    "a", form: "SalesOrder", formVersion: 1, workspace: "", principal: "p", payload: Data("{}".utf8), at: 0)
            }
            let gate = store.batches.durabilityGate
            #expect(gate == floor, "the first write opened the batch it waits for")
            struct Abandoned: Error {}
            // As SQLite does after a full disk: the whole transaction is gone, not just the savepoint.
            #expect(throws: Abandoned.self) {
                try store.batches.batched {
                    try store.db.run("ROLLBACK")
                    throw Abandoned()
                }
            }
            #expect(store.batches.lostBatch(in: floor...gate) != nil, "the first write's reply must not say it was saved")
            #expect(store.document("a") == nil)
            _ = try store.batches.batched {
                try store.createDocument(
                    "b", form: "SalesOrder", formVersion: 1, workspace: "", principal: "p", payload: Data("{}".utf8), at: 0)
            }
            let next = store.batches.durabilityGate
            #expect(next > gate, "a new batch never reuses a lost one's number")
            #expect(store.batches.lostBatch(in: next...next) == nil)
            store.batches.commit()
            #expect(store.batches.committedNumber == next)
            #expect(store.document("b") != nil)
            // A write that fails on its own rolls back only its savepoint.
            _ = try store.batches.batched {
                try store.createDocument(
                    "c", form: "SalesOrder", formVersion: 1, workspace: "", principal: "p", payload: Data("{}".utf8), at: 0)
            }
            #expect(throws: (any Error).self) {
                try store.batches.batched {
                    try store.createDocument(
                        "c", form: "SalesOrder", formVersion: 1, workspace: "", principal: "p", payload: Data("{}".utf8), at: 0)
                }
            }
            store.batches.commit()
            #expect(store.document("c") != nil)
            #expect(store.batches.lostBatch(in: floor...store.batches.committedNumber)?.isEmpty == false)
            #expect(store.batches.lostBatch(in: (gate + 1)...store.batches.committedNumber) == nil, "only the rolled-back batch was lost")
        }
    }

    /// Runs `body` for 0..<`count` on 16 threads of their own at once, as the HTTP workers make
    /// in-process requests (never on the concurrency pool's few threads, which other tests need).
    static func onSixteenThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = DispatchGroup()
            for thread in 0..<16 {
                done.enter()
                Thread.detachNewThread {
                    for n in stride(from: thread, to: count, by: 16) { body(n) }
                    done.leave()
                }
            }
            Thread.detachNewThread {
                done.wait()
                continuation.resume()
            }
        }
    }

    static func order(_ n: Int, token: String) throws -> HTTPRequest {
        let order = SalesOrder(
            customerId: EntityRef(Int64(n + 1)), orderDate: LocalDate("2026-11-30"),
            lines: [.init(sku: "AB-1234", quantity: 1, unitPrice: Money(minorUnits: 999, currency: "EUR"))])
        return HTTPRequest(
            method: "POST", path: order.endpoint, query: nil,
            headers: [
                "authorization": "Bearer \(token)", "idempotency-key": "k-\(n)", "formsync-document": "d-\(n)",
                "formsync-workspace": "acme",
                "formsync-form": "SalesOrder; version=\(SalesOrder.formVersion)", "content-type": "application/json",
            ],
            body: try FormRegistry.encode(order))
    }

    @Test func aWriteAndItsLedgerEntryAreOneCommitAndAReplayIsNone() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("one-commit-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.path, forms: FormCatalog.forms)
        let token = try server.issueAccessToken(workspaces: ["acme"])
        let before = server.sqliteStore.db.commitCount
        #expect(server.handle(try Self.order(1, token: token))?.status == 201)
        #expect(server.sqliteStore.db.commitCount == before + 1, "the key is held in flight in memory, not committed on its own")
        let replay = server.handle(try Self.order(1, token: token))
        #expect(replay?.status == 201 && replay?.headers.contains { $0 == ("Idempotent-Replayed", "true") } == true)
        #expect(server.sqliteStore.db.commitCount == before + 1)
        #expect(server.documents().count == 1)
    }

    @Test func aRestartedServerMakesItsLogDurableBeforeAReplayIsAnswered() async throws {
        try await OffThePool.run {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("restart-sync-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let token = try { () throws -> String in
                let first = try SyncServer(directory: folder.path, forms: FormCatalog.forms)
                let token = try first.issueAccessToken(workspaces: ["acme"])
                #expect(first.handle(try Self.order(1, token: token))?.status == 201)
                return token
            }()
            // The replay is answered from the ledger with no commit of its own: the open must
            // already have fsynced what the last process wrote.
            let restarted = try SyncServer(directory: folder.path, forms: FormCatalog.forms)
            #expect(restarted.fsyncCount == 1, "the open fsynced the log")
            let replay = restarted.handle(try Self.order(1, token: token))
            #expect(replay?.status == 201 && replay?.headers.contains { $0 == ("Idempotent-Replayed", "true") } == true)
        }
    }

    @Test func aKnownTokenIsRefusedOnceTheServerExpiresItOrItsTimeRunsOut() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("token-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let clock = Atomic<Int64>(1_000_000)
        let server = try SyncServer(
            directory: folder.path, forms: FormCatalog.forms, tokenLifetimeSeconds: 60, now: { clock.load(ordering: .relaxed) })
        let expired = try server.issueAccessToken(workspaces: ["acme"])
        #expect(server.handle(try Self.order(1, token: expired))?.status == 201)
        server.expireAccessTokens()
        #expect(server.handle(try Self.order(2, token: expired))?.status == 401, "expired by the server after it was checked once")
        let aging = try server.issueAccessToken(workspaces: ["acme"])
        #expect(server.handle(try Self.order(3, token: aging))?.status == 201)
        clock.store(1_000_000 + 60_000, ordering: .relaxed)
        #expect(server.handle(try Self.order(4, token: aging))?.status == 401, "its lifetime ran out after it was checked once")
        #expect(server.handle(try Self.order(5, token: "a-unknown"))?.status == 401)
    }

    @Test func aKeyThatAnotherServerProcessAnsweredMeanwhileIsReplayedNotFailed() async throws {
        try await OffThePool.run {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("two-servers-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            // Two servers on the same files, as in a restart that overlaps the old process: each
            // marks its keys in flight in its own memory only.
            let first = try SyncServer(directory: folder.path, forms: FormCatalog.forms)
            let second = try SyncServer(directory: folder.path, forms: FormCatalog.forms)
            let token = try first.issueAccessToken(workspaces: ["acme"])
            first.faults.add(.hold)
            let held = Mutex<HTTPResponse?>(nil)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                let response = first.handle(try! Self.order(1, token: token))
                held.withLock { $0 = response }
                done.signal()
            }
            #expect(first.faults.waitUntilHolding(1))
            let answered = second.handle(try Self.order(1, token: token))
            first.faults.releaseHeld()
            #expect(answered?.status == 201)
            done.wait()
            let replayed = try #require(held.withLock { $0 })
            #expect(replayed.status == 201, "\(String(decoding: replayed.body, as: UTF8.self))")
            #expect(replayed.headers.contains { $0 == ("Idempotent-Replayed", "true") })
            #expect(replayed.body == answered?.body)
            #expect(second.documents().count == 1 && second.documents().first?.appliedWrites == 1)
        }
    }
}

/// A file the server says it stored is on disk, name included, before the reply.
struct ServerFileDurabilityTests {
    static func file(_ bytes: Data, document: String, token: String) -> HTTPRequest {
        HTTPRequest(
            method: "POST", path: "/files", query: nil,
            headers: [
                "authorization": "Bearer \(token)", "idempotency-key": "k-\(document)", "formsync-document": document,
                "formsync-workspace": "acme",
                "content-type": "image/jpeg", "content-digest": "sha-256=:\(SHA256.hash(bytes).base64EncodedString()):",
            ],
            body: bytes)
    }

    @Test func aFileWhoseBytesOrNameCannotBeSyncedIsRefusedAndNotRecorded() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("file-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.path, forms: FormCatalog.forms)
        let token = try server.issueAccessToken(workspaces: ["acme"])
        let syncs = Atomic<Int>(0)
        server.sqliteStore.durableFiles = DurableFiles(sync: { _ in
            syncs.add(1, ordering: .relaxed)
            errno = EIO
            return -1
        })
        let photo = Data(repeating: 9, count: 4000)
        #expect(server.handle(Self.file(photo, document: "photo-1", token: token))?.status == 500)
        #expect(syncs.load(ordering: .relaxed) == 1, "the file's own fsync was asked for and refused")
        #expect(server.store.fileIDs().isEmpty)
        let stored = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("files").path).filter {
            !$0.hasPrefix("uploads")
        }
        #expect(stored.isEmpty, "nothing left beside the database: \(stored)")

        // A disk that syncs: the file and its folder are synced, and the same request is stored.
        let counted = Atomic<Int>(0)
        server.sqliteStore.durableFiles = DurableFiles(sync: { descriptor in
            counted.add(1, ordering: .relaxed)
            return fsync(descriptor)
        })
        #expect(server.handle(Self.file(photo, document: "photo-1", token: token))?.status == 201)
        #expect(counted.load(ordering: .relaxed) == 2)
        #expect(server.store.fileIDs().count == 1)
    }

    @Test func aFinishedUploadMovedIntoPlaceIsPutBackWhenItsFolderCannotBeSynced() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("move-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let part = folder.appendingPathComponent("u.part").path
        let target = folder.appendingPathComponent("blob.bin").path
        try Data(repeating: 1, count: 100).write(to: URL(fileURLWithPath: part))
        let refusing = DurableFiles(sync: { _ in
            errno = EIO
            return -1
        })
        #expect(throws: DurableFiles.Failure.self) { try refusing.move(part, to: target) }
        #expect(!FileManager.default.fileExists(atPath: target))
        #expect(FileManager.default.fileExists(atPath: part), "the part is back where a retry finds it")
        try DurableFiles().move(part, to: target)
        #expect(FileManager.default.fileExists(atPath: target) && !FileManager.default.fileExists(atPath: part))
    }

    @Test func aRestartedServerRemovesTheHalfWrittenFilesOfDeadProcessesOnly() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("partials-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = folder.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        // A pid no process has: the largest the kernel hands out, plus one.
        let dead = files.appendingPathComponent("ab.bin.partial-4194305")
        let live = files.appendingPathComponent("cd.bin.partial-\(getpid())")
        let kept = files.appendingPathComponent("ef.bin")
        for url in [dead, live, kept] { try Data([1, 2, 3]).write(to: url) }
        _ = try SyncServer(directory: folder.path, forms: FormCatalog.forms)
        #expect(!FileManager.default.fileExists(atPath: dead.path))
        #expect(FileManager.default.fileExists(atPath: live.path))
        #expect(FileManager.default.fileExists(atPath: kept.path))
    }
}
