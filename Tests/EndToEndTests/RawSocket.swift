import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Plain sockets for tests that speak raw bytes to a server on 127.0.0.1.
enum RawSocket {
    /// A server on 127.0.0.1 that answers each connection on a thread of its own, then closes
    /// it. (Its answer usually holds its owner, which then lives as long as the test process.)
    final class Server: Sendable {
        let port: UInt16
        private let listener: Int32

        init() throws {
            (listener, port) = try RawSocket.listen()
        }

        deinit {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }

        var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

        /// Accepts connections from now on, each answered by `answer`.
        func start(_ answer: @escaping @Sendable (_ connection: Int32) -> Void) {
            let listener = self.listener
            Thread {
                while true {
                    let fd = accept(listener, nil, nil)
                    guard fd >= 0 else { return }
                    Thread {
                        answer(fd)
                        close(fd)
                    }.start()
                }
            }.start()
        }
    }

    /// Connects to 127.0.0.1:`port`; the descriptor, or -1.
    static func connect(_ port: UInt16, blocking: Bool = true) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        if !blocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if result != 0 && !(errno == EINPROGRESS && !blocking) {
            close(fd)
            return -1
        }
        return fd
    }

    /// Listens on 127.0.0.1 at a free port: the descriptor and the port.
    static func listen() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, Glibc.listen(fd, 16) == 0 else {
            if fd >= 0 { close(fd) }
            throw POSIXError(.EADDRNOTAVAIL)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: actual.sin_port))
    }

    /// Reads one request (its head and the body its `Content-Length` announces); nil when the
    /// peer closed first.
    static func readRequest(_ fd: Int32) -> Data? {
        var request = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = request.range(of: Data("\r\n\r\n".utf8)) {
                let head = String(decoding: request[..<end.lowerBound], as: UTF8.self).lowercased()
                let length =
                    head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if request.count - end.upperBound >= length { return request }
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            request.append(contentsOf: buffer[0..<n])
        }
    }

    /// Sends one byte every 100 ms, `ticks` times, counting in `cutShort` a peer that closed
    /// the connection before the end.
    static func trickle(_ fd: Int32, ticks: Int, cutShort: CutShortCount) {
        for _ in 0..<ticks {
            usleep(100_000)
            guard Glibc.send(fd, " ", 1, Int32(MSG_NOSIGNAL)) == 1 else { return cutShort.add() }
        }
    }

    /// How many trickles a client cut short by closing its connection (or any other count
    /// that threads of a raw server add to).
    final class CutShortCount: Sendable {
        private let counter = Mutex(0)

        func add() { counter.withLock { $0 += 1 } }

        /// The count now.
        var count: Int { counter.withLock { $0 } }

        /// Whether the count reaches `n` within `seconds` (polled every 100 ms).
        func reaches(_ n: Int, within seconds: Int) async throws -> Bool {
            for _ in 0..<(seconds * 10) {
                if count >= n { return true }
                try await Task.sleep(for: .milliseconds(100))
            }
            return count >= n
        }
    }

    static func send(_ fd: Int32, _ bytes: Data) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until the peer closes or `seconds` pass.
    static func receive(_ fd: Int32, seconds: Int = 5) -> String {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var reply = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            reply.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: reply, as: UTF8.self)
    }

    /// Sends `bytes`, half-closes, and returns everything the server answered.
    static func exchange(_ port: UInt16, _ bytes: Data) -> String {
        let fd = connect(port)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        send(fd, bytes)
        shutdown(fd, Int32(SHUT_WR))
        return receive(fd)
    }
}
