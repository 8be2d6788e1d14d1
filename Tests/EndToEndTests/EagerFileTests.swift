import CorpusForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import FormSyncTorture
import Foundation
import Testing

/// A record whose file field says `download: eager` has its files fetched as soon as a device
/// pulls it, so that a technician who opens it offline later sees its photos.
struct EagerFileTests {
    @Test func thePhotoOfAPulledRecordMarkedEagerIsOnTheDeviceBeforeAnyoneAsks() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("eager-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try TestStore.server(
            directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms, records: FormCatalog.records)
        _ = try server.start()
        defer { server.stop() }
        let token = try server.issueAccessToken(workspaces: ["acme"])
        func device(_ name: String) throws -> Outbox {
            try Outbox(
                path: folder.appendingPathComponent("\(name).sqlite").path, forms: FormCatalog.forms, records: FormCatalog.records,
                transport: HTTPTransport(workspace: "acme", baseURL: server.baseURL) { token })
        }
        // A cook photographs a plate; it lands, its photo completing it.
        let cook = try device("cook")
        let photo = cook.placeholderIDs.next()
        let bytes = MediaSignature.stamped(Data((0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }), asFileNamed: "plate.jpg")
        let source = folder.appendingPathComponent("plate.jpg")
        try bytes.write(to: source)
        try await cook.enqueue(
            NewPlate(name: "Bacalhau", photo: FileRef(id: photo, contentType: "image/jpeg")),
            attachments: [.init(placeholder: photo, source: source, contentType: "image/jpeg")])
        for _ in 0..<5 where await cook.stateCounts()[.confirmed] != 2 { _ = await cook.flush() }
        #expect(await cook.stateCounts()[.confirmed] == 2)

        // Another device pulls the plate and, being eager, fetches its photo at once.
        let waiter = try device("waiter")
        _ = try await waiter.pull()
        let plate = try #require(try await waiter.records(Plate.all).first)
        let fileID = try #require(plate.photo?.id)
        #expect(fileID > 0)
        #expect(await waiter.fetchEagerFiles() == 1)
        #expect(await waiter.fetchEagerFiles() == 0, "already here")
        let requests = server.requestLog().filter { $0.path == "/files/\(fileID)" }.count
        let url = try await waiter.file(for: FileRef(id: fileID))
        #expect(try Data(contentsOf: url) == bytes)
        #expect(server.requestLog().filter { $0.path == "/files/\(fileID)" }.count == requests, "opened offline later: no request")
    }

    /// Issue 44, defect 16: eager downloads ignored the network's cost. On a metered network a
    /// record's file over the limit (or of no stated size) waits for a cheaper one, as uploads
    /// do; a person who opens it still gets it.
    @Test func eagerFilesWaitForACheaperNetworkAsUploadsDo() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("eager-cost-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try TestStore.server(
            directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms, records: FormCatalog.records)
        _ = try server.start()
        defer { server.stop() }
        let token = try server.issueAccessToken(workspaces: ["acme"])
        let cook = try Outbox(
            path: folder.appendingPathComponent("cook.sqlite").path, forms: FormCatalog.forms, records: FormCatalog.records,
            transport: HTTPTransport(workspace: "acme", baseURL: server.baseURL) { token })
        let photo = cook.placeholderIDs.next()
        let bytes = MediaSignature.stamped(Data((0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }), asFileNamed: "plate.jpg")
        let source = folder.appendingPathComponent("plate.jpg")
        try bytes.write(to: source)
        try await cook.enqueue(
            NewPlate(name: "Arroz de pato", photo: FileRef(id: photo, contentType: "image/jpeg")),
            attachments: [.init(placeholder: photo, source: source, contentType: "image/jpeg")])
        for _ in 0..<5 where await cook.stateCounts()[.confirmed] != 2 { _ = await cook.flush() }

        let waiter = try Outbox(
            path: folder.appendingPathComponent("waiter.sqlite").path, forms: FormCatalog.forms, records: FormCatalog.records,
            transport: HTTPTransport(workspace: "acme", baseURL: server.baseURL) { token },
            configuration: Outbox.Configuration(expensiveNetworkFileLimit: 10_000))
        try await waiter.setNetworkCost(.expensive)
        _ = try await waiter.pull()
        let fileID = try #require(try await waiter.records(Plate.all).first?.photo?.id)
        #expect(await waiter.fetchEagerFiles() == 0, "60 kB over a 10 kB cellular limit waits")
        #expect(server.requestLog().filter { $0.path == "/files/\(fileID)" }.isEmpty)
        try await waiter.setNetworkCost(.unmetered)
        #expect(await waiter.fetchEagerFiles() == 1, "on Wi-Fi it comes")
        #expect(try Data(contentsOf: try await waiter.file(for: FileRef(id: fileID))) == bytes)
    }
}
