import FormSyncModel
import FormSyncSQLite
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The outbox's own folder of attachment copies. The camera cache may be purged and the gallery
/// cleared; a queued upload references a copy the outbox owns, written and synced (mode 0600,
/// a name the outbox chose) before the row that references it commits. Each name carries the
/// writing process's id, so that copies a killed process left half-written or never committed
/// can be told apart from another live process's work and removed.
struct FileStash: Sendable {
    let directory: String
    /// `fsync` of a folder's descriptor; tests replace it with a disk that refuses.
    let syncFolder: @Sendable (Int32) -> Int32

    /// A stashed copy: where it is, its size, SHA-256, and the media type its first bytes say
    /// (nil: not recognised).
    struct Copy: Sendable {
        var path: String
        var byteCount: Int64
        var sha256: Data
        var mediaType: String?
    }

    init(directory: String, syncFolder: @escaping @Sendable (Int32) -> Int32 = { DurableSync.full($0) }) throws {
        self.directory = directory
        self.syncFolder = syncFolder
        let existed = FileManager.default.fileExists(atPath: directory)
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw OutboxError.stashFailed(path: directory, reason: "cannot create the stash folder: \(error.localizedDescription)")
        }
        if !existed { try sync(folder: (directory as NSString).deletingLastPathComponent) }
    }

    /// A path in the stash folder an attachment transform may write to; named as a partial
    /// copy of this process, so a process killed meanwhile leaves nothing behind for long.
    func scratchPath() -> String {
        (directory as NSString).appendingPathComponent("scratch-\(UUID().uuidString.lowercased()).p\(getpid()).blob.partial")
    }

    /// Copies `source` to `<directory>/<name>.p<pid>.blob`, syncing the file and the folder.
    func store(_ source: URL, name: String) throws -> Copy {
        let final = (directory as NSString).appendingPathComponent("\(name).p\(getpid()).blob")
        let temporary = final + ".partial"
        let input = open(source.path, O_RDONLY)
        guard input >= 0 else { throw failure(source.path, "cannot open the source: \(errnoText())") }
        defer { close(input) }
        var output = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if output < 0 && errno == ENOENT {
            // The folder was deleted under a running outbox (a cleaner, a person, the OS):
            // make it again; the items whose copies went with it are parked when they come up.
            if mkdir(directory, 0o700) == 0 { try sync(folder: (directory as NSString).deletingLastPathComponent) }
            output = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        }
        guard output >= 0 else { throw failure(temporary, "cannot create the copy: \(errnoText())") }
        var hasher = SHA256()
        var total: Int64 = 0
        var head = Data()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        do {
            while true {
                let n = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n < 0 { throw failure(source.path, "cannot read the source: \(errnoText())") }
                if n == 0 { break }
                var written = 0
                while written < n {
                    let w = chunk.withUnsafeBytes { write(output, $0.baseAddress! + written, n - written) }
                    if w < 0 && errno == EINTR { continue }
                    if w < 0 { throw failure(temporary, "cannot write the copy: \(errnoText())") }
                    written += w
                }
                hasher.update(Data(chunk[0..<n]))
                if head.count < MediaSignature.prefixLength {
                    head.append(contentsOf: chunk[0..<min(n, MediaSignature.prefixLength - head.count)])
                }
                total += Int64(n)
            }
            guard DurableSync.full(output) == 0 else { throw failure(temporary, "cannot sync the copy: \(errnoText())") }
            guard close(output) == 0 else { throw failure(temporary, "cannot close the copy: \(errnoText())") }
        } catch {
            close(output)
            unlink(temporary)
            throw error
        }
        guard rename(temporary, final) == 0 else {
            let reason = errnoText()
            unlink(temporary)
            throw failure(final, "cannot move the copy into place: \(reason)")
        }
        do {
            try sync(folder: directory)
        } catch {
            unlink(final)
            throw error
        }
        return Copy(path: final, byteCount: total, sha256: hasher.finalize(), mediaType: MediaSignature.mediaType(of: head))
    }

    /// Makes the names in `folder` durable: a copy whose name could vanish in a power loss is
    /// not stored, whatever its bytes. A file system that cannot sync a folder (EINVAL) keeps
    /// its names without one.
    private func sync(folder: String) throws {
        do {
            try FolderSync.sync(folder, with: syncFolder)
        } catch {
            throw failure(
                folder,
                error.call == "open" ? "cannot open the folder to sync it: \(error.reason)" : "cannot sync the folder: \(error.reason)")
        }
    }

    /// Removes what a process that is gone left behind: every partial copy, and every complete
    /// copy no stored item references (`isReferenced`). Copies of live processes are left alone.
    func sweep(isReferenced: (String) throws -> Bool) throws {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        let me = getpid()
        for name in names where name.hasSuffix(".partial") || name.hasSuffix(".blob") {
            if let owner = Self.owner(of: name), owner == me || kill(owner, 0) == 0 || errno == EPERM { continue }
            let path = (directory as NSString).appendingPathComponent(name)
            if try name.hasSuffix(".partial") || !isReferenced(path) { unlink(path) }
        }
    }

    /// The process id in a stash name (`<id>.p<pid>.blob[.partial]`).
    static func owner(of name: String) -> pid_t? {
        let parts = name.split(separator: ".")
        guard let tag = parts.first(where: { $0.hasPrefix("p") && $0.count > 1 && $0.dropFirst().allSatisfy(\.isNumber) }) else {
            return nil
        }
        return pid_t(tag.dropFirst())
    }

    /// Removes a stashed copy; a copy already gone is fine.
    func remove(_ path: String) {
        unlink(path)
    }

    private func failure(_ path: String, _ reason: String) -> OutboxError {
        .stashFailed(path: path, reason: reason)
    }

    private func errnoText() -> String {
        String(cString: strerror(errno))
    }
}
