import FormSyncProtocol
import Foundation

/// Reads HTTP/1.1 requests from bytes as they arrive, never trusting a number or a length it is
/// given: a head is bounded in size and header count, header values may not hold control
/// characters, `Content-Length` is plain digits within the body limit, chunk sizes are parsed
/// without overflow and checked against the limit before a byte of the chunk is kept. Pure (no
/// sockets), so it is fuzzed and tested on its own.
struct HTTPRequestParser {
    /// What the server allows.
    struct Limits: Sendable {
        var maxHeaderBytes = 16 * 1024
        var maxHeaderCount = 100
        var maxTargetBytes = 4096
    }

    /// What the parser wants next.
    enum Step {
        /// More bytes are needed.
        case needMore
        /// A head was read; the caller decides the body limit (or refuses) and calls `beginBody`.
        case head(HTTPRequest, keepAlive: Bool)
        /// The body is complete: the whole request.
        case request(HTTPRequest, keepAlive: Bool)
        /// The input is refused with this status; the connection must close.
        case refuse(ProblemCode, String)
    }

    private enum Phase {
        case head
        case waitingForBodyDecision(HTTPRequest, keepAlive: Bool)
        case body(HTTPRequest, keepAlive: Bool, remaining: Int)
        case chunked(HTTPRequest, keepAlive: Bool, decoder: ChunkedDecoder)
    }

    let limits: Limits
    private(set) var buffer: [UInt8] = []
    private var phase: Phase = .head
    private var bodyLimit = 0
    private var body: [UInt8] = []
    /// How far the buffer was already searched for the end of the head, so that a head arriving
    /// a byte at a time is scanned once, not once per read.
    private var headScanned = 0

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Empty lines read since the last request (RFC 9112 §2.2 asks a server to ignore at
    /// least one before a request line; more than `maxEmptyLines` is no client's).
    private var emptyLines = 0
    static let maxEmptyLines = 4

    /// Whether bytes of a request have arrived that are not answered yet (empty lines before a
    /// request line count: they are timed like the head they precede).
    var isMidRequest: Bool {
        if case .head = phase { return !buffer.isEmpty || emptyLines > 0 }
        return true
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    mutating func append(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
    }

    /// Reads the body of the head last returned, allowing at most `limit` bytes. The caller has
    /// checked `Content-Length` against its own limits already when it chose `limit`.
    mutating func beginBody(limit: Int) -> Step {
        guard case .waitingForBodyDecision(let request, let keepAlive) = phase else {
            return .refuse(.internal, "no head to read a body for")
        }
        bodyLimit = max(0, limit)
        body = []
        if let encoding = request.headers["transfer-encoding"] {
            guard encoding.lowercased() == "chunked", request.headers["content-length"] == nil else {
                return .refuse(.unsupportedEncoding, "only Transfer-Encoding: chunked is supported, without Content-Length")
            }
            phase = .chunked(request, keepAlive: keepAlive, decoder: ChunkedDecoder(limit: bodyLimit))
        } else {
            let length = Self.contentLength(request.headers["content-length"]) ?? 0
            guard length <= bodyLimit else { return .refuse(.tooLarge, "the body is larger than \(bodyLimit) bytes") }
            phase = .body(request, keepAlive: keepAlive, remaining: length)
        }
        return next()
    }

    /// Consumes what it can of the buffer.
    mutating func next() -> Step {
        switch phase {
        case .head:
            return readHead()
        case .waitingForBodyDecision:
            return .needMore
        case .body(var request, let keepAlive, let remaining):
            let take = min(remaining, buffer.count)
            body.append(contentsOf: buffer[0..<take])
            buffer.removeFirst(take)
            if remaining - take > 0 {
                phase = .body(request, keepAlive: keepAlive, remaining: remaining - take)
                return .needMore
            }
            request.body = Data(body)
            body = []
            phase = .head
            return .request(request, keepAlive: keepAlive)
        case .chunked(var request, let keepAlive, var decoder):
            switch decoder.consume(&buffer, into: &body) {
            case .needMore:
                phase = .chunked(request, keepAlive: keepAlive, decoder: decoder)
                return .needMore
            case .failed(let code, let message):
                return .refuse(code, message)
            case .done:
                request.body = Data(body)
                body = []
                phase = .head
                return .request(request, keepAlive: keepAlive)
            }
        }
    }

    /// `Content-Length` as plain decimal digits, or nil.
    static func contentLength(_ value: String?) -> Int? {
        guard let value, !value.isEmpty, value.utf8.count <= 18, value.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int(value)
    }

    private mutating func readHead() -> Step {
        // A few empty lines before a request line are ignored, as HTTP/1.1 allows; a stream
        // of them is refused rather than read for ever.
        while buffer.count >= 2 && buffer[0] == 13 && buffer[1] == 10 {
            buffer.removeFirst(2)
            headScanned = 0
            emptyLines += 1
            if emptyLines > Self.maxEmptyLines {
                return .refuse(.malformed, "more than \(Self.maxEmptyLines) empty lines before a request line")
            }
        }
        guard let end = Self.headEnd(buffer, from: headScanned, limit: limits.maxHeaderBytes) else {
            if buffer.count > limits.maxHeaderBytes {
                return .refuse(.headerTooLarge, "the request head is larger than \(limits.maxHeaderBytes) bytes")
            }
            headScanned = max(0, buffer.count - 3)
            return .needMore
        }
        headScanned = 0
        emptyLines = 0
        let head = Array(buffer[0..<end])
        buffer.removeFirst(end + 4)
        var lines = Self.split(head)
        guard !lines.isEmpty else { return .refuse(.malformed, "empty request head") }
        let requestLine = lines.removeFirst()
        guard lines.count <= limits.maxHeaderCount else {
            return .refuse(.headerTooLarge, "more than \(limits.maxHeaderCount) header fields")
        }
        let parts = requestLine.split(separator: 32, omittingEmptySubsequences: false)
        // Each part is checked to be ASCII before it is read as text.
        guard parts.count == 3,
            !parts[0].isEmpty, parts[0].allSatisfy({ (65...90).contains($0) }),
            parts[1].first == 47, parts[1].count <= limits.maxTargetBytes, parts[1].allSatisfy({ $0 > 32 && $0 < 127 }),
            parts[2].elementsEqual("HTTP/1.1".utf8) || parts[2].elementsEqual("HTTP/1.0".utf8)
        else { return .refuse(.malformed, "malformed request line") }
        let method = String(decoding: parts[0], as: UTF8.self)
        let target = String(decoding: parts[1], as: UTF8.self)
        let version = String(decoding: parts[2], as: UTF8.self)
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: 58), colon > line.startIndex else { return .refuse(.malformed, "malformed header line") }
            let nameBytes = line[line.startIndex..<colon]
            guard nameBytes.allSatisfy(Self.isTokenByte) else { return .refuse(.malformed, "malformed header name") }
            // Token bytes are ASCII: lowercased byte by byte.
            let name = String(decoding: nameBytes.lazy.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
            var valueBytes = line[(colon + 1)...]
            // Field values: visible characters, spaces, tabs and obs-text; no control characters.
            guard valueBytes.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else {
                return .refuse(.malformed, "the value of header \(name) holds a control character")
            }
            while let first = valueBytes.first, first == 32 || first == 9 { valueBytes.removeFirst() }
            while let last = valueBytes.last, last == 32 || last == 9 { valueBytes.removeLast() }
            guard let value = String(validating: valueBytes, as: UTF8.self) else {
                return .refuse(.malformed, "the value of header \(name) is not UTF-8")
            }
            if name == "content-length" || name == "transfer-encoding" || name == "host", headers[name] != nil {
                return .refuse(.malformed, "header \(name) appears twice")
            }
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        if let length = headers["content-length"], Self.contentLength(length) == nil {
            return .refuse(.malformed, "malformed Content-Length")
        }
        if headers["content-length"] != nil && headers["transfer-encoding"] != nil {
            return .refuse(.malformed, "a request may not carry both Content-Length and Transfer-Encoding")
        }
        let split = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let connection = headers["connection"]?.lowercased()
        let keepAlive = version == "HTTP/1.1" ? connection != "close" : connection == "keep-alive"
        let request = HTTPRequest(method: method, path: split[0], query: split.count > 1 ? split[1] : nil, headers: headers, body: Data())
        phase = .waitingForBodyDecision(request, keepAlive: keepAlive)
        return .head(request, keepAlive: keepAlive)
    }

    /// The offset of `\r\n\r\n` within the first `limit + 4` bytes, searching from `start`.
    static func headEnd(_ bytes: [UInt8], from start: Int = 0, limit: Int) -> Int? {
        let last = min(bytes.count, limit + 4) - 4
        guard last >= 0 else { return nil }
        var i = max(0, start)
        while i <= last {
            if bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    static func split(_ head: [UInt8]) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var i = 0
        while i + 1 < head.count {
            if head[i] == 13 && head[i + 1] == 10 {
                lines.append(head[start..<i])
                start = i + 2
                i += 2
            } else {
                i += 1
            }
        }
        lines.append(head[start..<head.count])
        return lines
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122: return true
        default: return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

/// Decodes a chunked body as bytes arrive. A chunk size is at most 15 hex digits
/// and is checked against the body limit before any of its bytes are kept, so no size can
/// overflow or make the decoder hold more than the limit.
struct ChunkedDecoder {
    enum Result: Equatable {
        case needMore
        case done
        case failed(ProblemCode, String)
    }

    private enum State {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailers
    }

    let limit: Int
    private var state = State.size
    private var total = 0
    private var trailerBytes = 0

    init(limit: Int) {
        self.limit = limit
    }

    mutating func consume(_ buffer: inout [UInt8], into body: inout [UInt8]) -> Result {
        while true {
            switch state {
            case .size:
                guard let end = Self.lineEnd(buffer) else {
                    return buffer.count > 1024 ? .failed(.malformed, "a chunk-size line is too long") : .needMore
                }
                let line = buffer[0..<end]
                buffer.removeFirst(end + 2)
                let digits = line.prefix { $0 != 59 && $0 != 32 && $0 != 9 }  // up to ';' or white space
                guard !digits.isEmpty, digits.count <= 15, digits.allSatisfy(Self.isHexDigit),
                    let size = Int(String(decoding: digits, as: UTF8.self), radix: 16), size >= 0
                else {
                    return .failed(.malformed, "malformed chunk size")
                }
                guard size <= limit - total else { return .failed(.tooLarge, "the body is larger than \(limit) bytes") }
                state = size == 0 ? .trailers : .data(remaining: size)
            case .data(let remaining):
                let take = min(remaining, buffer.count)
                body.append(contentsOf: buffer[0..<take])
                buffer.removeFirst(take)
                total += take
                if take < remaining {
                    state = .data(remaining: remaining - take)
                    return .needMore
                }
                state = .dataEnd
            case .dataEnd:
                guard buffer.count >= 2 else { return .needMore }
                guard buffer[0] == 13 && buffer[1] == 10 else { return .failed(.malformed, "a chunk does not end with CRLF") }
                buffer.removeFirst(2)
                state = .size
            case .trailers:
                guard let end = Self.lineEnd(buffer) else {
                    return buffer.count > 8192 ? .failed(.headerTooLarge, "the trailers are too large") : .needMore
                }
                buffer.removeFirst(end + 2)
                trailerBytes += end + 2
                if end == 0 { return .done }
                if trailerBytes > 8192 { return .failed(.headerTooLarge, "the trailers are too large") }
            }
        }
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
    }

    static func lineEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        for i in 0..<(bytes.count - 1) where bytes[i] == 13 && bytes[i + 1] == 10 { return i }
        return nil
    }
}
