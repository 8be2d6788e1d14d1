import FormSyncModel
import Foundation

/// The files of pulled records kept on the device (`<outbox path>.files`): where each copy
/// lives, and fetching one whole, in pieces a lost connection does not waste (a copy cut off
/// goes on from the bytes already here), checked against the digest the server gives before it
/// is used. Which copies exist and when each was last used is the outbox's database's to say
/// (`OutboxStore+Cache`); the outbox decides what to evict.
///
/// Its file work blocks: it runs on the caller's executor (the outbox's database thread), never
/// on the cooperative pool.
struct AttachmentCache: Sendable {
    /// The folder of every copy, of every workspace.
    let directory: String
    /// The data protection class of every copy (a pulled record's photo is as private as a
    /// captured one).
    let protection: FileProtection

    /// The most pieces one fetch takes (of 4 MiB each): a file the server says is endless is refused.
    static let maxPieces = 1_000
    static let pieceBytes = 4 << 20

    /// Where file `id` of `view` (a workspace, or a workspace and a person) is kept.
    func path(of id: Int64, view: String) -> String {
        let tag = SHA256.hash(Data(view.utf8)).prefix(6).map { String(format: "%02x", $0) }.joined()
        return (directory as NSString).appendingPathComponent("\(tag)-\(id)")
    }

    /// Removes the copy of file `id` of `view`, if there is one.
    func remove(_ id: Int64, view: String) {
        try? FileManager.default.removeItem(atPath: path(of: id, view: view))
    }

    /// Fetches file `id` of `view` into its place through `piece` (the bytes from an
    /// offset), going on from a copy cut off before, and returns its size and digest once it is
    /// whole, checked and in place.
    func fetch(
        _ id: Int64, view: String, isolation: isolated (any Actor)? = #isolation,
        piece: (_ offset: Int64, _ maxBytes: Int) async -> FilePiece
    ) async throws -> (byteCount: Int64, sha256: Data) {
        let final = path(of: id, view: view)
        try makeDirectory()
        let partial = final + ".partial"
        if !FileManager.default.fileExists(atPath: partial) {
            _ = FileManager.default.createFile(atPath: partial, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        guard let handle = FileHandle(forUpdatingAtPath: partial) else {
            throw OutboxError.fileUnavailable(id: id, reason: "cannot write \(partial)")
        }
        defer { try? handle.close() }
        var offset = Int64((try? handle.seekToEnd()) ?? 0)
        var total: Int64?
        var digest: Data?
        for _ in 0..<Self.maxPieces {
            if let total, offset >= total { break }
            switch await piece(offset, Self.pieceBytes) {
            case .piece(let bytes, let size, let sha256, _):
                guard size > 0, size <= (1 << 42), total.map({ $0 == size }) ?? true, digest.map({ $0 == sha256 }) ?? true,
                    !bytes.isEmpty || offset == size
                else {
                    throw OutboxError.fileUnavailable(id: id, reason: "the server's pieces do not agree on the file's size or digest")
                }
                (total, digest) = (size, sha256)
                do {
                    try handle.write(contentsOf: bytes)
                } catch {
                    throw OutboxError.fileUnavailable(id: id, reason: "cannot write the copy: \(error.localizedDescription)")
                }
                offset += Int64(bytes.count)
            case .missing:
                try? FileManager.default.removeItem(atPath: partial)
                throw OutboxError.fileUnavailable(id: id, reason: "the server holds no such file in this workspace")
            case .failed(let reason, _):
                throw OutboxError.fileUnavailable(id: id, reason: reason)
            }
        }
        guard let total, let digest, offset == total else {
            throw OutboxError.fileUnavailable(id: id, reason: "the file did not arrive whole")
        }
        try handle.synchronize()
        guard (try? SHA256.hash(fileAt: partial)) == digest else {
            try? FileManager.default.removeItem(atPath: partial)
            throw OutboxError.fileUnavailable(
                id: id, reason: "the bytes fetched are not the file's (digest mismatch); fetched again next time")
        }
        guard rename(partial, final) == 0 else { throw OutboxError.fileUnavailable(id: id, reason: "cannot move the copy into place") }
        try? protection.apply(to: [final])
        return (total, digest)
    }

    /// The folder, in the outbox's data protection class (files made in it inherit it).
    private func makeDirectory() throws {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try protection.apply(to: [directory])
        } catch {
            throw OutboxError.fileUnavailable(id: 0, reason: "cannot create \(directory): \(error.localizedDescription)")
        }
    }
}
