import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The fsync of a folder: what makes a name just created or renamed in it durable (a file's own
/// fsync does not). One policy for the outbox's log, its stash and the server's stored files.
package enum FolderSync {
    /// A folder that could not be opened or synced: the call that failed and its `errno`.
    package struct Failure: Error, CustomStringConvertible, Sendable {
        /// `open` or `fsync`.
        package var call: String
        package var code: Int32
        /// The system's words for `code`.
        package var reason: String { String(cString: strerror(code)) }
        package var description: String { "\(call): \(reason)" }
    }

    /// Syncs `folder` (the current folder when empty) with `sync`, which is `DurableSync.full`
    /// (`F_FULLFSYNC` on Apple platforms) unless a test passes a disk that refuses. A file system that cannot sync a folder at all answers
    /// EINVAL: it keeps its names without one, and that counts as synced.
    package static func sync(_ folder: String, with sync: (Int32) -> Int32 = { DurableSync.full($0) }) throws(Failure) {
        let descriptor = open(folder.isEmpty ? "." : folder, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(call: "open", code: errno) }
        defer { close(descriptor) }
        guard sync(descriptor) == 0 || errno == EINVAL else { throw Failure(call: "fsync", code: errno) }
    }
}
