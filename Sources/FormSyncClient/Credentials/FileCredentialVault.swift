import FormSyncSQLite
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A `CredentialVault` in one JSON file that only its owner may read or write (mode 0600),
/// replaced whole at each save (written beside it, synced, renamed over it, the folder synced)
/// so that a crash leaves either the old credentials or the new ones, never a mix. On iOS and
/// its siblings the file takes `protection` (by default readable after the first unlock, so
/// that a background sync can refresh).
public struct FileCredentialVault: CredentialVault {
    public let path: String
    public let protection: FileProtection

    /// The most bytes of a vault file read back (a vault is a few hundred bytes).
    static let maxBytes = 64 << 10

    public init(path: String, protection: FileProtection = .completeUntilFirstUserAuthentication) {
        self.path = path
        self.protection = protection
    }

    /// Why a vault could not be read or written.
    public struct Failure: Error, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "the credential vault \(path) \(reason)" }
    }

    public func load() throws -> StoredCredentials? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW)
        if descriptor < 0 {
            if errno == ENOENT { return nil }
            throw Failure(path: path, reason: "could not be opened: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw Failure(path: path, reason: "is not a regular file")
        }
        guard status.st_size <= Self.maxBytes else { throw Failure(path: path, reason: "is larger than a vault can be") }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw Failure(path: path, reason: "could not be read whole") }
            filled += count
        }
        do {
            return try JSONDecoder().decode(StoredCredentials.self, from: Data(bytes))
        } catch {
            throw Failure(path: path, reason: "does not hold credentials (\(error))")
        }
    }

    public func save(_ credentials: StoredCredentials?) throws {
        guard let credentials else {
            if unlink(path) != 0, errno != ENOENT {
                throw Failure(path: path, reason: "could not be erased: \(String(cString: strerror(errno)))")
            }
            try syncFolder()
            return
        }
        let bytes = Array(try JSONEncoder().encode(credentials))
        let temporary = path + ".new"
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw Failure(path: path, reason: "could not be written: \(String(cString: strerror(errno)))")
        }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                let reason = String(cString: strerror(errno))
                close(descriptor)
                unlink(temporary)
                throw Failure(path: path, reason: "could not be written: \(reason)")
            }
            written += count
        }
        let synced = DurableSync.full(descriptor) == 0
        close(descriptor)
        guard synced else {
            unlink(temporary)
            throw Failure(path: path, reason: "could not be made durable")
        }
        try protection.apply(to: [temporary])
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw Failure(path: path, reason: "could not be replaced: \(String(cString: strerror(errno)))")
        }
        try syncFolder()
    }

    private func syncFolder() throws {
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FolderSync.sync(folder.isEmpty ? "." : folder)
        } catch {
            throw Failure(path: path, reason: "could not be made durable (its folder: \(error))")
        }
    }

}
