import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one way FormSync makes a file's bytes survive a power loss, on every platform. On Apple
/// platforms a plain `fsync` hands the data to the drive, which may keep it in its volatile
/// cache: only `fcntl(F_FULLFSYNC)` asks the drive to write it through, so "saved" there means
/// what it means on Linux, where `fsync`/`fdatasync` already do.
package enum DurableSync {
    /// A file's data (and its size), as a commit of the log needs: `fdatasync` on Linux,
    /// `F_FULLFSYNC` on Apple platforms (falling back to `fsync` on a file system that does not
    /// support it, such as some network volumes).
    package static func data(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
            return fullSync(descriptor)
        #elseif os(Linux)
            return fdatasync(descriptor)
        #else
            return fsync(descriptor)
        #endif
    }

    /// A file or a folder, metadata included: a stored copy, a name just created in a folder.
    package static func full(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
            if fcntl(descriptor, F_FULLFSYNC) == 0 { return 0 }
            return fsync(descriptor)
        #elseif canImport(Glibc) || canImport(Musl)
            return fsync(descriptor)
        #endif
    }
}
