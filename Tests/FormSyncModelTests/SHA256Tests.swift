import FormSyncModel
import Foundation
import Testing

/// The digest files are checked with, on the device and on the server.
struct SHA256Tests {
    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    @Test func knownVectors() {
        #expect(Self.hex(SHA256.hash(Data())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Self.hex(SHA256.hash(Data("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Self.hex(SHA256.hash(Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func feedingInPiecesOfAnySizeGivesTheSameDigest() {
        let data = Data((0..<10_007).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        let whole = SHA256.hash(data)
        for piece in [1, 3, 63, 64, 65, 1000, 4096] {
            var hasher = SHA256()
            var offset = 0
            while offset < data.count {
                hasher.update(data[offset..<min(data.count, offset + piece)])
                offset += piece
            }
            #expect(hasher.finalize() == whole, "pieces of \(piece)")
        }
    }

    @Test func aFileIsHashedAsItsBytes() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sha-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        let data = Data((0..<3_000_001).map { UInt8(truncatingIfNeeded: $0) })
        try data.write(to: url)
        #expect(try SHA256.hash(fileAt: url.path) == SHA256.hash(data))
    }
}
