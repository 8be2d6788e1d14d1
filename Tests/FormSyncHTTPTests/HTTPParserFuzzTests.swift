import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncHTTP

/// Seeded mutations of well-formed requests, cut into random reads: the parser never traps,
/// never accepts a body over its limit, and every request it returns is one it was given room for.
struct HTTPParserFuzzTests {
    static let seeds = [
        "POST /customers HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nIdempotency-Key: k\r\n\r\nhello",
        "POST /files HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n",
        "GET /health HTTP/1.1\r\nConnection: keep-alive\r\n\r\nGET /x?y=1 HTTP/1.0\r\n\r\n",
    ]
    static let fragments = [
        "\r\n", "\r\n\r\n", ":", " ", "\u{1}", "\u{7f}", "7fffffffffffffff", "-1", "Content-Length: 9999999\r\n",
        "Transfer-Encoding: chunked\r\n", "ffffffffffffffffffff\r\n", "é", "\0", String(repeating: "A", count: 20_000),
    ]

    @Test func fiveThousandMutatedRequestsInRandomReadsNeverBreakTheParser() async {
        await OffThePool.compute {
            var random = SplitMix64(state: 20_261_130)
            let limit = 64
            var requests = 0
            var refusals = 0
            for round in 0..<5_000 {
                var bytes = Array(Self.seeds[round % Self.seeds.count].utf8)
                for _ in 0..<(1 + Int(random.next() % 4)) {
                    let at = Int(random.next() % UInt64(bytes.count + 1))
                    switch random.next() % 4 {
                    case 0: bytes.insert(contentsOf: Array(Self.fragments[Int(random.next() % UInt64(Self.fragments.count))].utf8), at: at)
                    case 1: if at < bytes.count { bytes.remove(at: at) }
                    case 2: if at < bytes.count { bytes[at] = UInt8(truncatingIfNeeded: random.next()) }
                    default: bytes.insert(contentsOf: bytes.prefix(Int(random.next() % 40)), at: at)
                    }
                }
                var parser = HTTPRequestParser()
                var offset = 0
                outer: while offset < bytes.count {
                    let step = 1 + Int(random.next() % 64)
                    parser.append(Array(bytes[offset..<min(bytes.count, offset + step)]))
                    offset += step
                    var next = parser.next()
                    while true {
                        switch next {
                        case .needMore: continue outer
                        case .refuse(let code, _):
                            #expect([400, 408, 413, 431, 501].contains(code.status))
                            refusals += 1
                            break outer
                        case .head: next = parser.beginBody(limit: limit)
                        case .request(let request, _):
                            #expect(request.body.count <= limit)
                            #expect(request.path.hasPrefix("/"))
                            requests += 1
                            next = parser.next()
                        }
                    }
                }
            }
            #expect(requests > 500)  // the mutations leave many requests intact…
            #expect(refusals > 500)  // …and break many others
        }
    }
}
