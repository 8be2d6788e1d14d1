import CSHA256
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

/// The digest files are checked with, on the device and on the server.
struct SHA256Tests {
    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    @Test func knownVectors() {
        #expect(Self.hex(SHA256.hash(Data())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Self.hex(SHA256.hash(Data("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Self.hex(SHA256.hash(Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
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

    @Test func aFileIsHashedAsItsBytes() async throws {
        try await OffThePool.compute {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("sha-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: url) }
            let data = Data((0..<3_000_001).map { UInt8(truncatingIfNeeded: $0) })
            try data.write(to: url)
            #expect(try SHA256.hash(fileAt: url.path) == SHA256.hash(data))
        }
    }

    /// The SHA extensions' code (used where the CPU has them) against the portable code, on
    /// messages of 1 to 40 blocks and every state they lead through. Where the CPU lacks the
    /// extensions both calls run the portable code, and the test says so.
    @Test func theCPUsSHAExtensionsAgreeWithThePortableCode() {
        var random = SystemRandomNumberGenerator()
        for blocks in 1...40 {
            let bytes = (0..<(64 * blocks)).map { _ in UInt8.random(in: 0...255, using: &random) }
            var fast: [UInt32] = (0..<8).map { _ in UInt32.random(in: 0...UInt32.max, using: &random) }
            var portable = fast
            bytes.withUnsafeBufferPointer { input in
                formsync_sha256_blocks(&fast, input.baseAddress!, blocks)
                formsync_sha256_blocks_portable(&portable, input.baseAddress!, blocks)
            }
            #expect(fast == portable, "\(blocks) blocks")
        }
        #if arch(x86_64)
            if formsync_sha256_accelerated() == 0 { print("SHA256Tests: this CPU has no SHA extensions; only the portable code ran") }
        #endif
    }
}
