import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A small HTTP/1.1 server on a loopback socket: one thread per connection, keep-alive,
/// `Content-Length` and chunked bodies, a size limit, and a clean 400 for anything malformed.
/// The handler returns nil to drop the connection without replying (the "reply lost" fault).
public final class HTTPServer: @unchecked Sendable {
    /// Answers one request; nil drops the connection without a reply.
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse?

    private let handler: Handler
    private let maxBodyBytes: Int
    private let maxHeaderBytes = 64 * 1024
    private var listener: Int32 = -1
    private let lock = NSLock()
    private var connections: Set<Int32> = []
    private var stopped = false

    /// A server that answers with `handler` and refuses bodies over `maxBodyBytes` with 413.
    public init(maxBodyBytes: Int = 64 * 1024 * 1024, handler: @escaping Handler) {
        self.maxBodyBytes = maxBodyBytes
        self.handler = handler
    }

    /// Listens on 127.0.0.1:`port` (0 picks a free port) and returns the port.
    public func start(port: UInt16 = 0) throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError.socket("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ServerError.socket("cannot listen on 127.0.0.1:\(port): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.stackSize = 1 << 20
        thread.start()
        return UInt16(bigEndian: actual.sin_port)
    }

    /// Stops accepting and closes every open connection.
    public func stop() {
        lock.lock()
        stopped = true
        let open = connections
        connections = []
        let fd = listener
        listener = -1
        lock.unlock()
        if fd >= 0 {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
        for connection in open { shutdown(connection, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop(_ fd: Int32) {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            lock.lock()
            if stopped {
                lock.unlock()
                close(client)
                return
            }
            connections.insert(client)
            lock.unlock()
            var timeout = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var noDelay: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
            let thread = Thread { [self] in serve(client) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        var reader = SocketReader(fd: fd)
        defer {
            lock.lock()
            connections.remove(fd)
            lock.unlock()
            close(fd)
        }
        while true {
            let parsed: ParseResult
            do {
                parsed = try readRequest(&reader)
            } catch {
                return
            }
            switch parsed {
            case .closed:
                return
            case .malformed(let status, let message):
                write(fd, .problem(status, HTTPResponse.reason(status), detail: message), keepAlive: false)
                return
            case .request(let request, let keepAlive):
                guard let response = handler(request) else {
                    shutdown(fd, Int32(SHUT_RDWR))
                    return
                }
                guard write(fd, response, keepAlive: keepAlive), keepAlive else { return }
            }
        }
    }

    private enum ParseResult {
        case request(HTTPRequest, keepAlive: Bool)
        case malformed(Int, String)
        case closed
    }

    private func readRequest(_ reader: inout SocketReader) throws -> ParseResult {
        guard let head = try reader.readHead(limit: maxHeaderBytes) else { return .closed }
        guard let text = String(data: head, encoding: .utf8) else { return .malformed(400, "the request head is not UTF-8") }
        if head.count >= maxHeaderBytes { return .malformed(431, "the request head is too large") }
        var lines = text.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1."), requestLine[1].hasPrefix("/"),
            !requestLine[0].isEmpty, requestLine[0].allSatisfy({ $0.isUppercase })
        else { return .malformed(400, "malformed request line") }
        var headers: [String: String] = [:]
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { return .malformed(400, "malformed header line") }
            let name = line[..<colon].lowercased()
            guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else { return .malformed(400, "malformed header name") }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        var body = Data()
        if let encoding = headers["transfer-encoding"] {
            guard encoding.lowercased() == "chunked" else { return .malformed(501, "unsupported transfer encoding") }
            guard let chunked = try reader.readChunked(limit: maxBodyBytes) else { return .malformed(400, "malformed chunked body") }
            guard chunked.count <= maxBodyBytes else { return .malformed(413, "the body is larger than \(maxBodyBytes) bytes") }
            body = chunked
        } else if let lengthText = headers["content-length"] {
            guard let length = Int(lengthText), length >= 0 else { return .malformed(400, "malformed Content-Length") }
            guard length <= maxBodyBytes else { return .malformed(413, "the body is larger than \(maxBodyBytes) bytes") }
            guard let data = try reader.read(exactly: length) else { return .malformed(400, "the body ended early") }
            body = data
        }
        let target = String(requestLine[1])
        let parts = target.split(separator: "?", maxSplits: 1).map(String.init)
        let version = requestLine[2]
        let connection = headers["connection"]?.lowercased()
        let keepAlive = version == "HTTP/1.1" ? connection != "close" : connection == "keep-alive"
        return .request(
            HTTPRequest(method: String(requestLine[0]), path: parts[0], query: parts.count > 1 ? parts[1] : nil, headers: headers, body: body),
            keepAlive: keepAlive)
    }

    @discardableResult
    private func write(_ fd: Int32, _ response: HTTPResponse, keepAlive: Bool) -> Bool {
        var head = "HTTP/1.1 \(response.status) \(HTTPResponse.reason(response.status))\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(response.body.count)\r\n"
        head += keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
        var data = Data(head.utf8)
        data.append(response.body)
        return data.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
    }
}

/// Why the server could not start.
public enum ServerError: Error, CustomStringConvertible {
    case socket(String)
    case storage(String)

    public var description: String {
        switch self {
        case .socket(let message), .storage(let message): return message
        }
    }
}

/// Buffered reads from a socket.
struct SocketReader {
    let fd: Int32
    var buffer = Data()

    struct ReadError: Error {}

    private mutating func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { throw ReadError() }
        if n == 0 { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    /// The bytes up to the blank line ending the head (not included), or nil if the peer closed first.
    mutating func readHead(limit: Int) throws -> Data? {
        let separator = Data("\r\n\r\n".utf8)
        while true {
            if let range = buffer.range(of: separator) {
                let head = buffer[buffer.startIndex..<range.lowerBound]
                buffer = Data(buffer[range.upperBound...])
                return Data(head)
            }
            if buffer.count >= limit { return Data(buffer.prefix(limit)) }
            guard try fill() else { return nil }
        }
    }

    mutating func read(exactly count: Int) throws -> Data? {
        while buffer.count < count {
            guard try fill() else { return nil }
        }
        let data = Data(buffer.prefix(count))
        buffer = Data(buffer.dropFirst(count))
        return data
    }

    mutating func readLine() throws -> String? {
        let crlf = Data("\r\n".utf8)
        while true {
            if let range = buffer.range(of: crlf) {
                let line = String(data: buffer[buffer.startIndex..<range.lowerBound], encoding: .utf8)
                buffer = Data(buffer[range.upperBound...])
                return line
            }
            if buffer.count > 8192 { return nil }
            guard try fill() else { return nil }
        }
    }

    mutating func readChunked(limit: Int) throws -> Data? {
        var body = Data()
        while true {
            guard let line = try readLine(), let size = Int(line.split(separator: ";", omittingEmptySubsequences: false)[0].trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                return nil
            }
            if size == 0 {
                while let trailer = try readLine(), !trailer.isEmpty {}
                return body
            }
            guard body.count + size <= limit + 1, let chunk = try read(exactly: size) else { return nil }
            body.append(chunk)
            guard try readLine() == "" else { return nil }
        }
    }
}
