import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A file or folder a command could not write, with the system's reason in words
/// ("cannot write Generated/Order.swift: Not a directory"), never a raw NSError dump.
package struct WriteFailure: Error, CustomStringConvertible {
    package var path: String
    package var reason: String

    package init(path: String, _ error: any Error) {
        self.path = path
        self.reason = Self.reason(error)
    }

    package var description: String { "cannot write \(path): \(reason)" }

    /// The POSIX reason under Foundation's error when there is one (the useful part).
    package static func reason(_ error: any Error) -> String {
        var current = error as NSError
        while true {
            if current.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(current.code))) }
            guard let underlying = current.userInfo[NSUnderlyingErrorKey] as? any Error else { break }
            current = underlying as NSError
        }
        if let posix = (error as NSError).userInfo["NSPOSIXErrorCode"] as? Int { return String(cString: strerror(Int32(posix))) }
        switch CocoaError.Code(rawValue: (error as NSError).code) {
        case .fileWriteNoPermission: return String(cString: strerror(EACCES))
        case .fileWriteOutOfSpace: return String(cString: strerror(ENOSPC))
        case .fileWriteVolumeReadOnly: return String(cString: strerror(EROFS))
        default: return (error as NSError).localizedDescription
        }
    }

    /// Runs `body`, which writes `path`; a failure becomes a `WriteFailure` naming `path`.
    package static func writing<T>(_ path: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as WriteFailure {
            throw error
        } catch {
            throw WriteFailure(path: path, error)
        }
    }
}
