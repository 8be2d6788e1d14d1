import FormSyncSQLite
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The files the server keeps beside its database (stored files, uploads in progress), written
/// so that a reply saying "stored" survives a power loss: the bytes and the name that finds them
/// are both synced before the row that references them commits.
struct DurableFiles: Sendable {
    /// A file or folder that could not be made durable.
    struct Failure: Error, CustomStringConvertible {
        var path: String
        var reason: String
        var description: String { "\(path) could not be made durable: \(reason)" }
    }

    /// `fsync` of a descriptor; tests pass a disk that refuses.
    var sync: @Sendable (Int32) -> Int32 = { DurableSync.full($0) }

    /// Writes `bytes` to `path` through a temporary file beside it: synced, renamed into place,
    /// its folder synced. On failure nothing is left at `path` or beside it.
    func write(_ bytes: Data, to path: String) throws {
        let temporary = path + ".partial-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure(temporary, "open") }
        var problem = writeAll(bytes, to: descriptor, path: temporary)
        if problem == nil && sync(descriptor) != 0 { problem = failure(temporary, "fsync") }
        // Closed once, whatever happened before.
        if close(descriptor) != 0 && problem == nil { problem = failure(temporary, "close") }
        do {
            if let problem { throw problem }
            try move(temporary, to: path)
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// Writes `bytes` into the existing file at `path` from `offset` (what lay past it is cut
    /// first) and syncs them: an upload's append.
    func append(_ bytes: Data, to path: String, at offset: Int64) throws {
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure(path, "open") }
        var problem: Failure?
        if ftruncate(descriptor, off_t(offset)) != 0 { problem = failure(path, "ftruncate") }
        if problem == nil && lseek(descriptor, off_t(offset), SEEK_SET) < 0 { problem = failure(path, "lseek") }
        if problem == nil { problem = writeAll(bytes, to: descriptor, path: path) }
        if problem == nil && sync(descriptor) != 0 { problem = failure(path, "fsync") }
        if close(descriptor) != 0 && problem == nil { problem = failure(path, "close") }
        if let problem { throw problem }
    }

    /// Renames a file whose bytes are already synced into place and syncs the folder, so the
    /// new name is durable too. On failure nothing is left at `target` and the file is back at
    /// `source`, so that a retry can finish the move.
    func move(_ source: String, to target: String) throws {
        guard rename(source, target) == 0 else { throw failure(target, "rename") }
        do {
            try syncFolder(of: target)
        } catch {
            if rename(target, source) != 0 { unlink(target) }
            throw error
        }
    }

    /// Syncs the folder holding `path`, which makes a name just created or moved there durable.
    /// A file system that cannot sync a folder (EINVAL) keeps its names without one.
    func syncFolder(of path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FolderSync.sync(folder, with: sync)
        } catch {
            throw Failure(path: folder, reason: error.description)
        }
    }

    /// Removes the temporary files that processes killed mid-write left in `folder` (those of
    /// live processes, another server on the same directory, are left alone).
    static func sweepPartials(in folder: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names {
            guard let marker = name.range(of: ".partial-", options: .backwards), let pid = pid_t(name[marker.upperBound...]), pid > 0 else {
                continue
            }
            if kill(pid, 0) == 0 || errno == EPERM { continue }
            unlink((folder as NSString).appendingPathComponent(name))
        }
    }

    /// Writes every byte (a write cut short by a signal goes on); the failure, if any.
    private func writeAll(_ bytes: Data, to descriptor: Int32, path: String) -> Failure? {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { writeBytes(descriptor, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return failure(path, "write") }
            written += n
        }
        return nil
    }

    private func failure(_ path: String, _ call: String) -> Failure {
        Failure(path: path, reason: "\(call): \(String(cString: strerror(errno)))")
    }
}

/// `write(2)`, under a name the type's own `write` does not hide.
private func writeBytes(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}
