#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The few socket calls whose spelling differs between Apple's C library and Linux's: a TCP
/// socket, and a send that never raises SIGPIPE (a peer gone mid-reply is an error to handle,
/// not a signal that ends the process).
package enum Socket {
    /// A new IPv4 TCP socket, or -1 (`errno` says why). On Apple platforms it is marked
    /// `SO_NOSIGPIPE`, as Linux's `send` is told per call with `MSG_NOSIGNAL`.
    package static func tcp() -> Int32 {
        #if canImport(Darwin)
            let fd = socket(AF_INET, SOCK_STREAM, 0)
            if fd >= 0 { noSignalOnWrite(fd) }
            return fd
        #elseif canImport(Glibc) || canImport(Musl)
            return socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
    }

    /// Marks an accepted socket as `tcp()` marks a new one.
    package static func noSignalOnWrite(_ fd: Int32) {
        #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #elseif canImport(Glibc) || canImport(Musl)
            // Nothing to mark: `send` passes MSG_NOSIGNAL.
        #endif
    }

    /// Sends what it can of `bytes`: the count sent, or -1 (`errno` says why).
    package static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        #if canImport(Darwin)
            return Darwin.send(fd, bytes.baseAddress, bytes.count, 0)
        #elseif canImport(Glibc)
            return Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        #elseif canImport(Musl)
            return Musl.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        #endif
    }

    /// Closes a socket (for callers whose own `close` hides the C library's).
    package static func close(_ fd: Int32) {
        #if canImport(Darwin)
            _ = Darwin.close(fd)
        #elseif canImport(Glibc)
            _ = Glibc.close(fd)
        #elseif canImport(Musl)
            _ = Musl.close(fd)
        #endif
    }

    /// An IPv4 socket address, its length field set where the platform has one.
    package static func address(_ host: in_addr, port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #elseif canImport(Glibc) || canImport(Musl)
            // No length field.
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = host
        return address
    }
}
