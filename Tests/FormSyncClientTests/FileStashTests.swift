import Foundation
import Testing

@testable import FormSyncClient

#if canImport(Glibc)
    import Glibc
#endif

/// The stash's copies are durable, name included, before anything references them.
struct FileStashTests {
    @Test func aCopyWhoseFolderCannotBeSyncedIsRefusedAndLeavesNothingBehind() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stash-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let source = folder.appendingPathComponent("photo.jpg")
        try Data(repeating: 7, count: 5000).write(to: source)
        let stashFolder = folder.appendingPathComponent("stash").path
        _ = try FileStash(directory: stashFolder)
        let refusing = try FileStash(
            directory: stashFolder,
            syncFolder: { _ in
                errno = EIO
                return -1
            })
        do {
            _ = try refusing.store(source, name: "copy-1")
            Issue.record("a copy whose name may not survive a power loss was reported stored")
        } catch OutboxError.stashFailed(let path, let reason) {
            #expect(path == stashFolder)
            #expect(reason.contains("cannot sync the folder"), "\(reason)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: stashFolder).isEmpty)
        // The same copy with a disk that syncs is stored.
        let copy = try FileStash(directory: stashFolder).store(source, name: "copy-1")
        #expect(copy.byteCount == 5000)
        #expect(FileManager.default.fileExists(atPath: copy.path))
    }

    @Test func aNewStashFolderIsRefusedWhenItsParentCannotBeSynced() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stash-parent-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(throws: OutboxError.self) {
            _ = try FileStash(
                directory: folder.appendingPathComponent("stash").path,
                syncFolder: { _ in
                    errno = EIO
                    return -1
                })
        }
    }
}
