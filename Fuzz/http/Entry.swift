// libFuzzer target: the reference server's HTTP request parser (Sources/FormSyncServer/
// HTTPRequestParser.swift), fed arbitrary bytes in arbitrary splits. Built by Fuzz/run.sh.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // The first byte chooses how the input is cut into reads, as a network would.
    let step = max(1, Int(bytes.first ?? 1))
    var parser = HTTPRequestParser()
    var offset = 1
    var requests = 0
    outer: while offset <= bytes.count {
        let end = min(bytes.count, offset + step)
        parser.append(Array(bytes[min(offset, bytes.count)..<end]))
        offset = end + (end == bytes.count ? 1 : 0)
        var next = parser.next()
        while true {
            switch next {
            case .needMore:
                continue outer
            case .refuse:
                break outer
            case .head:
                next = parser.beginBody(limit: 4096)
            case .request(let request, _):
                precondition(request.body.count <= 4096, "a body over the limit was accepted")
                requests += 1
                if requests > 1000 { break outer }
                next = parser.next()
            }
        }
    }
    return 0
}
