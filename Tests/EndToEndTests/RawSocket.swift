import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Plain sockets for tests that speak raw bytes to a server on 127.0.0.1.
enum RawSocket {
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
