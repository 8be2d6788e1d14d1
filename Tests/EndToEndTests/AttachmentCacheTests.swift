import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import Foundation
import Synchronization
import Testing

/// Files of pulled records fetched to the device on first use (`Outbox.file(for:)`): from the
/// real server in pieces, resumed after a cut, checked against the digest, kept within a byte
/// budget least recently used first, never dropping a file a queued item names.
@Suite(.serialized)
struct AttachmentCacheTests {
    /// The real transport, with a switch that makes the next piece fail or arrive corrupted.
    final class Flaky: OutboxTransport, @unchecked Sendable {
        let inner: HTTPTransport
        let trouble = Mutex<[String]>([])
        init(_ inner: HTTPTransport) { self.inner = inner }
        var workspace: String { inner.workspace }
        func send(_ request: OutboundRequest) async -> DeliveryOutcome { await inner.send(request) }
        func probe() async -> Bool { await inner.probe() }
        func fetchFile(id: Int64, from offset: Int64, maxBytes: Int) async -> FilePiece {
            let next = trouble.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if next == "cut" { return .failed(reason: "the connection dropped", retryAfter: nil) }
            let piece = await inner.fetchFile(id: id, from: offset, maxBytes: maxBytes)
            if next == "corrupt", case .piece(var bytes, let total, let sha, let type) = piece {
                bytes[bytes.startIndex] ^= 0xFF
                return .piece(bytes: bytes, total: total, sha256: sha, contentType: type)
            }
            return piece
        }
    }

    /// Stores `count` photos of `bytes` each on the server through a device; their file ids.
    static func storedPhotos(_ world: World, count: Int, bytes: Int) async throws -> [(id: Int64, data: Data)] {
        let courier = try world.device("courier")
        var documents: [(String, URL)] = []
        for n in 0..<count {
            let photo = courier.placeholderIDs.next()
            let url = try world.file("shop-\(n).jpg", bytes: bytes)
            let id = try await courier.enqueue(
                NewCustomer(name: "Shop \(n)", segment: .retail, shopFront: FileRef(id: photo, contentType: "image/jpeg")),
                attachments: [.init(placeholder: photo, source: url, contentType: "image/jpeg")])
            documents.append((try #require(try await courier.item(id)).documentID, url))
        }
        #expect(try await world.drain("courier").remaining == 0)
        return try documents.map { document, url in
            let held = try JSONDecoder().decode(NewCustomer.self, from: #require(world.server.document(document)).payload)
            return (try #require(held.shopFront?.id), try Data(contentsOf: url))
        }
    }

    func tablet(_ world: World, budget: Int64 = 256_000_000) throws -> (Outbox, Flaky) {
        let flaky = Flaky(world.transport())
        let outbox = try Outbox(
            path: world.directory.appendingPathComponent("tablet.sqlite").path, forms: FormCatalog.forms, transport: flaky,
            configuration: Outbox.Configuration(attachmentCacheBytes: budget))
        return (outbox, flaky)
    }

    @Test func aStoredFileIsFetchedInPiecesResumedAfterACutAndCheckedAgainstItsDigest() async throws {
        let world = try World()
        let (id, data) = try #require(try await Self.storedPhotos(world, count: 1, bytes: 8_300_000).first)
        let (outbox, flaky) = try tablet(world)
        flaky.trouble.withLock { $0 = ["ok", "cut"] }
        await #expect(throws: OutboxError.self) { _ = try await outbox.file(for: FileRef(id: id)) }
        let url = try await outbox.file(for: FileRef(id: id))
        #expect(try Data(contentsOf: url) == data)
        // 8.3 MB in 4 MiB pieces is two; the piece before the cut was not fetched again.
        #expect(world.server.requestLog().filter { $0.method == "GET" && $0.path == "/files/\(id)" }.count == 2)
        // Used again: from the cache, no request.
        #expect(try await outbox.file(for: FileRef(id: id)) == url)
        #expect(world.server.requestLog().filter { $0.path == "/files/\(id)" }.count == 2)

        // Bytes that are not the file's are refused and fetched again whole.
        let (other, again) = try tablet(world)
        try FileManager.default.removeItem(at: url)
        again.trouble.withLock { $0 = ["corrupt"] }
        await #expect(throws: OutboxError.self) { _ = try await other.file(for: FileRef(id: id)) }
        #expect(try Data(contentsOf: try await other.file(for: FileRef(id: id))) == data)
        await #expect(throws: OutboxError.self) { _ = try await other.file(for: FileRef(id: 987_654)) }
    }

    @Test func theCacheKeepsItsBudgetLeastRecentlyUsedFirstButNeverAFileAQueuedItemNames() async throws {
        let world = try World()
        let photos = try await Self.storedPhotos(world, count: 3, bytes: 10_000)
        world.clock.advance(by: 1)
        let (outbox, _) = try tablet(world, budget: 15_000)
        // An edit waiting on the tablet names the first photo.
        try await outbox.enqueue(
            NewCustomer(
                name: "Shop 0 again", segment: .retail, shopFront: FileRef(id: photos[0].id, byteCount: 10_000, contentType: "image/jpeg")))
        let first = try await outbox.file(for: FileRef(id: photos[0].id))
        let second = try await outbox.file(for: FileRef(id: photos[1].id))
        #expect(FileManager.default.fileExists(atPath: first.path), "named by a queued item: kept over the budget")
        let third = try await outbox.file(for: FileRef(id: photos[2].id))
        #expect(!FileManager.default.fileExists(atPath: second.path), "the least recently used goes")
        #expect(FileManager.default.fileExists(atPath: first.path))
        #expect(try Data(contentsOf: third) == photos[2].data)
    }
}
