import FormSyncModel
import Foundation
import Testing

@testable import FormSyncClient

/// The attachment cache's own work, against pieces a closure serves: copies of two workspaces
/// never share a path, a copy cut off goes on from its bytes, and bytes that are not the file's
/// are never put in place.
struct AttachmentCacheUnitTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attachments-\(UUID().uuidString)")

    func cache() -> AttachmentCache { AttachmentCache(directory: folder.path, protection: .none) }

    static func piece(_ bytes: Data, from offset: Int64, max: Int, digest: Data? = nil) -> FilePiece {
        let start = Int(offset)
        let end = min(bytes.count, start + max)
        return .piece(
            bytes: bytes.subdata(in: start..<end), total: Int64(bytes.count), sha256: digest ?? SHA256.hash(bytes), contentType: nil)
    }

    @Test func eachWorkspaceHasItsOwnCopyAndRemovingOneLeavesTheOther() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = cache()
        #expect(cache.path(of: 7, view: "acme") != cache.path(of: 7, view: "demo"))
        let a = Data("acme's".utf8)
        let d = Data("demo's".utf8)
        _ = try await cache.fetch(7, view: "acme") { offset, max in Self.piece(a, from: offset, max: max) }
        _ = try await cache.fetch(7, view: "demo") { offset, max in Self.piece(d, from: offset, max: max) }
        cache.remove(7, view: "acme")
        #expect(!FileManager.default.fileExists(atPath: cache.path(of: 7, view: "acme")))
        #expect(FileManager.default.contents(atPath: cache.path(of: 7, view: "demo")) == d)
    }

    @Test func aCopyCutOffGoesOnFromItsBytesAndIsCheckedWhole() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = cache()
        let bytes = Data((0..<10_000).map { UInt8($0 % 251) })
        // The first fetch is cut after its first piece.
        await #expect(throws: OutboxError.self) {
            _ = try await cache.fetch(1, view: "acme") { offset, _ in
                offset == 0 ? Self.piece(bytes, from: 0, max: 4_000) : .failed(reason: "connection lost", retryAfter: nil)
            }
        }
        var offsets: [Int64] = []
        let (total, digest) = try await cache.fetch(1, view: "acme") { offset, _ in
            offsets.append(offset)
            return Self.piece(bytes, from: offset, max: 4_000)
        }
        #expect(offsets == [4_000, 8_000], "the second fetch goes on from the bytes already here")
        #expect(total == 10_000 && digest == SHA256.hash(bytes))
        #expect(FileManager.default.contents(atPath: cache.path(of: 1, view: "acme")) == bytes)
    }

    @Test func bytesThatAreNotTheFilesAreNeverPutInPlace() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = cache()
        let bytes = Data(repeating: 1, count: 5_000)
        await #expect(throws: OutboxError.self) {
            _ = try await cache.fetch(2, view: "acme") { offset, max in
                Self.piece(bytes, from: offset, max: max, digest: SHA256.hash(Data("another file".utf8)))
            }
        }
        #expect(!FileManager.default.fileExists(atPath: cache.path(of: 2, view: "acme")))
        #expect(!FileManager.default.fileExists(atPath: cache.path(of: 2, view: "acme") + ".partial"), "started over next time")
    }
}
