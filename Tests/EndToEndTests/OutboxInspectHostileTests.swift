import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Issue 44, defect 5: `formsync outbox inspect` hung on a FIFO (or a FIFO `-wal`), copied any
/// file with an outbox header whole into the temporary folder (gigabytes from a sparse file),
/// and through a symbolic link made SQLite create `-wal` and `-shm` beside the real outbox. A
/// tool that reads changes nothing and ends.
struct OutboxInspectHostileTests {
    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("inspect-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// A closed outbox holding one queued customer.
    static func closedOutbox(in folder: URL) async throws -> String {
        let path = folder.appendingPathComponent("closed.sqlite").path
        let outbox = try Outbox(path: path, forms: FormCatalog.forms, transport: OfflineOutboxTransport())
        try await outbox.enqueue(NewCustomer(name: "Linked shop", segment: .retail))
        return path
    }

    static func refusal(_ path: String) -> String? {
        do {
            _ = try OutboxInspector(path: path)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func aFIFOOrAFIFOLogIsRefusedWithoutBeingOpened() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("pipe.sqlite").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let outbox = try await Self.closedOutbox(in: folder)
        #expect(mkfifo(outbox + "-wal", 0o600) == 0)
        // Off the pool: on 0.13.0 each open waited for a writer that never came.
        let (pipe, log) = await OffThePool.run { (Self.refusal(fifo), Self.refusal(outbox)) }
        #expect(pipe?.contains("not a regular file") == true, "\(pipe ?? "accepted")")
        #expect(log?.contains("-wal log is not a regular file") == true, "\(log ?? "accepted")")
    }

    @Test func aFileWhoseSizeIsNotWhatItsHeaderSaysIsRefusedBeforeAnythingIsCopied() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let outbox = try await Self.closedOutbox(in: folder)
        try? FileManager.default.removeItem(atPath: outbox + "-wal")
        try? FileManager.default.removeItem(atPath: outbox + "-shm")
        let sparse = folder.appendingPathComponent("sparse.sqlite").path
        try FileManager.default.copyItem(atPath: outbox, toPath: sparse)
        let handle = try #require(FileHandle(forWritingAtPath: sparse))
        try handle.truncate(atOffset: 2 << 30)  // 2 GiB, nearly all of it a hole
        try handle.close()
        let refused = await OffThePool.run { Self.refusal(sparse) }
        #expect(refused?.contains("and its header says") == true, "\(refused ?? "accepted")")
    }

    @Test func throughASymbolicLinkTheRealOutboxIsReadAndNothingAppearsBesideIt() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let real = folder.appendingPathComponent("real")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        let outbox = try await Self.closedOutbox(in: real)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: outbox + suffix) }
        let before = try FileManager.default.contentsOfDirectory(atPath: real.path).sorted()
        let link = folder.appendingPathComponent("link.sqlite").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: outbox)

        let names = try await OffThePool.run { () -> [String?] in
            let inspector = try OutboxInspector(path: link)
            return try inspector.items(workspace: nil).map(\.form)
        }
        #expect(names == ["NewCustomer"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: real.path).sorted() == before, "no -wal or -shm beside the real outbox")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["link.sqlite", "real"])
    }
}
