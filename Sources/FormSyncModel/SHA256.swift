import Foundation

/// SHA-256 (FIPS 180-4), for the `Content-Digest` of uploaded files. The toolchain's Foundation
/// on Linux has no CryptoKit, and no outside package can be fetched, so it lives here.
public struct SHA256: Sendable {
    private var state: [UInt32] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ]
    private var buffer: [UInt8] = []
    private var length: UInt64 = 0

    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    public init() {}

    /// The digest of a file's bytes, read in 1 MiB pieces (never the whole file in memory).
    public static func hash(fileAt path: String) throws -> Data {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(chunk) }
        return hasher.finalize()
    }

    /// The digest of `data` in one call.
    public static func hash(_ data: Data) -> Data {
        var hasher = SHA256()
        hasher.update(data)
        return hasher.finalize()
    }

    /// Feeds more bytes.
    public mutating func update(_ data: Data) {
        length &+= UInt64(data.count)
        var data = data[...]
        if !buffer.isEmpty {
            let take = min(64 - buffer.count, data.count)
            buffer.append(contentsOf: data.prefix(take))
            data = data.dropFirst(take)
            if buffer.count == 64 {
                let block = buffer
                block.withUnsafeBytes { compress(blocks: $0) }
                buffer.removeAll(keepingCapacity: true)
            }
        }
        let whole = data.count - data.count % 64
        if whole > 0 {
            data.prefix(whole).withUnsafeBytes { compress(blocks: $0) }
        }
        buffer.append(contentsOf: data.dropFirst(whole))
    }

    /// The 32-byte digest of everything fed so far.
    public mutating func finalize() -> Data {
        let bitLength = length &* 8
        var tail = buffer
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        tail.withUnsafeBytes { compress(blocks: $0) }
        var out = Data(capacity: 32)
        for word in state {
            out.append(contentsOf: [UInt8(word >> 24), UInt8((word >> 16) & 0xff), UInt8((word >> 8) & 0xff), UInt8(word & 0xff)])
        }
        return out
    }

    /// Compresses every whole 64-byte block of `bytes`. Written over raw memory, with one
    /// message schedule for all blocks: a large file is hashed on the device and on the server
    /// (and in debug builds, where per-block arrays cost the most).
    @_optimize(speed)
    private mutating func compress(blocks bytes: UnsafeRawBufferPointer) {
        let count = bytes.count / 64
        guard count > 0, let base = bytes.baseAddress else { return }
        var (a0, b0, c0, d0) = (state[0], state[1], state[2], state[3])
        var (e0, f0, g0, h0) = (state[4], state[5], state[6], state[7])
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            Self.k.withUnsafeBufferPointer { k in
                for block in 0..<count {
                    let p = base + block &* 64
                    for i in 0..<16 {
                        let q = p + i &* 4
                        w[i] = UInt32(q.load(as: UInt8.self)) << 24 | UInt32((q + 1).load(as: UInt8.self)) << 16
                            | UInt32((q + 2).load(as: UInt8.self)) << 8 | UInt32((q + 3).load(as: UInt8.self))
                    }
                    for i in 16..<64 {
                        let x = w[i &- 15], y = w[i &- 2]
                        let s0 = (x >> 7 | x << 25) ^ (x >> 18 | x << 14) ^ (x >> 3)
                        let s1 = (y >> 17 | y << 15) ^ (y >> 19 | y << 13) ^ (y >> 10)
                        w[i] = w[i &- 16] &+ s0 &+ w[i &- 7] &+ s1
                    }
                    var (a, b, c, d, e, f, g, h) = (a0, b0, c0, d0, e0, f0, g0, h0)
                    for i in 0..<64 {
                        let s1 = (e >> 6 | e << 26) ^ (e >> 11 | e << 21) ^ (e >> 25 | e << 7)
                        let ch = (e & f) ^ (~e & g)
                        let t1 = h &+ s1 &+ ch &+ k[i] &+ w[i]
                        let s0 = (a >> 2 | a << 30) ^ (a >> 13 | a << 19) ^ (a >> 22 | a << 10)
                        let maj = (a & b) ^ (a & c) ^ (b & c)
                        h = g; g = f; f = e; e = d &+ t1
                        d = c; c = b; b = a; a = t1 &+ s0 &+ maj
                    }
                    a0 &+= a; b0 &+= b; c0 &+= c; d0 &+= d
                    e0 &+= e; f0 &+= f; g0 &+= g; h0 &+= h
                }
            }
        }
        state = [a0, b0, c0, d0, e0, f0, g0, h0]
    }
}
