import FormSyncModel
import Foundation

/// Where the embedded store keeps bytes: each stored file once, by its digest (`<hex>.bin`), and
/// each unfinished upload as a part (`uploads/<id>.part`), under one owner-only folder, written
/// durably (`DurableFiles`) so that a row never names bytes a crash lost.
struct FileBlobs: Sendable {
    let directory: String
    /// How bytes and names are made durable (tests replace it with a disk that refuses).
    var durable = DurableFiles()

    /// The folder, made owner-only, with what an interrupted write left in it removed.
    init(directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: SQLiteServerStore.ownerOnlyFolder)
        DurableFiles.sweepPartials(in: directory)
    }

    func path(of digest: Data) -> String {
        (directory as NSString).appendingPathComponent(digest.map { String(format: "%02x", $0) }.joined() + ".bin")
    }

    /// A stored file's bytes, whole.
    func contents(of digest: Data) -> Data? {
        FileManager.default.contents(atPath: path(of: digest))
    }

    /// At most `count` bytes of a stored file from `offset`.
    func read(_ digest: Data, from offset: Int64, count: Int) throws -> Data {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path(of: digest)))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(max(0, offset)))
        return try handle.read(upToCount: max(0, count)) ?? Data()
    }

    /// Stores `bytes` under their digest, unless bytes with that digest are stored already.
    func store(_ bytes: Data, digest: Data) throws {
        let target = path(of: digest)
        if !FileManager.default.fileExists(atPath: target) {
            try durable.write(bytes, to: target)
        }
    }

    private var uploadsDirectory: String { (directory as NSString).appendingPathComponent("uploads") }

    func partPath(_ id: String) -> String {
        (uploadsDirectory as NSString).appendingPathComponent(id + ".part")
    }

    /// An empty part for upload `id`, its name durable before any row says it is there.
    func createPart(_ id: String) throws {
        try FileManager.default.createDirectory(
            atPath: uploadsDirectory, withIntermediateDirectories: true, attributes: SQLiteServerStore.ownerOnlyFolder)
        guard FileManager.default.createFile(atPath: partPath(id), contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: partPath(id)])
        }
        try durable.syncFolder(of: partPath(id))
    }

    func removePart(_ id: String) {
        try? FileManager.default.removeItem(atPath: partPath(id))
    }

    /// Writes `bytes` into upload `id`'s part at `offset` and syncs them.
    func append(_ bytes: Data, toPart id: String, at offset: Int64) throws {
        try durable.append(bytes, to: partPath(id), at: offset)
    }

    /// The SHA-256 of upload `id`'s part.
    func digest(ofPart id: String) throws -> Data {
        try SHA256.hash(fileAt: partPath(id))
    }

    /// The first bytes of upload `id`'s part, as many as a media signature reads.
    func prefix(ofPart id: String) throws -> Data {
        guard let handle = FileHandle(forReadingAtPath: partPath(id)) else { return Data() }
        defer { try? handle.close() }
        return try handle.read(upToCount: MediaSignature.prefixLength) ?? Data()
    }

    /// Makes upload `id`'s finished part the stored file of `digest` (moved, not copied; dropped
    /// when those bytes are stored already).
    func adoptPart(_ id: String, digest: Data) throws {
        let target = path(of: digest)
        if FileManager.default.fileExists(atPath: target) {
            removePart(id)
        } else {
            try durable.move(partPath(id), to: target)
        }
    }
}
