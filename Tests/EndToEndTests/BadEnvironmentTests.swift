import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import FormSyncTesting
import Foundation
import Testing

/// The device's environment turns hostile under a running outbox: its stash folder is deleted,
/// its database files become read-only, its disk fills up during a pull. Each gets a clear
/// error or a parked item with a reason, never a crash or a false "saved", and work resumes
/// when the environment recovers. (Clocks that jump both ways run in every `torture sim` seed.)
struct BadEnvironmentTests {
    @Test func aStashFolderDeletedUnderARunningOutboxParksItsUploadWithAReasonAndKeepsWorking() async throws {
        let world = try World()
        let outbox = try world.device("stash")
        let photo = outbox.placeholderIDs.next()
        let customer = try await outbox.enqueue(
            NewCustomer(name: "Shop", segment: .retail, shopFront: FileRef(id: photo, contentType: "image/jpeg")),
            attachments: [.init(placeholder: photo, source: try world.file("front.jpg", bytes: 20_000), contentType: "image/jpeg")])
        let stash = world.directory.appendingPathComponent("stash.sqlite.stash")
        try FileManager.default.removeItem(at: stash)

        _ = await outbox.flush()
        let parked = try await outbox.parkedItems()
        #expect(
            parked.contains { $0.kind == .file && $0.state == .rejected && $0.lastError == "the stashed copy of the file is missing" },
            "\(parked)")
        #expect(try await outbox.item(customer)?.state == .blocked)
        #expect(try await outbox.item(customer)?.lastError?.isEmpty == false)
        #expect(world.server.documents().isEmpty)

        // The next capture recreates the folder and goes through.
        let again = outbox.placeholderIDs.next()
        let second = try await outbox.enqueue(
            NewCustomer(name: "Shop again", segment: .retail, shopFront: FileRef(id: again, contentType: "image/jpeg")),
            attachments: [.init(placeholder: again, source: try world.file("front2.jpg", bytes: 20_000), contentType: "image/jpeg")])
        _ = await outbox.flush()
        #expect(try await outbox.item(second)?.state == .confirmed)
        #expect(world.server.documents().count == 1)
    }

    @Test func aDatabaseMadeReadOnlyMidRunRefusesWritesClearlyAndNothingSaysSaved() async throws {
        let world = try World()
        let path = world.directory.appendingPathComponent("ro.sqlite").path
        var outbox: Outbox? = try world.device("ro")
        let before = try await outbox!.enqueue(salesOrder(customer: 42, marker: "before"))
        // The database's files become immutable (chattr +i: even root cannot write them).
        let files = [path, path + "-wal"]
        try chattr("+i", files)
        defer { try? chattr("-i", files) }

        await #expect {
            _ = try await outbox!.enqueue(salesOrder(customer: 42, marker: "during"))
        } throws: { error in
            guard case OutboxError.storage(let sqlite) = error else { return false }
            return !sqlite.message.isEmpty
        }
        let report = await outbox!.flush()
        #expect(report.sent == 0)
        #expect(await outbox!.stateCounts()[.confirmed] == nil)

        try chattr("-i", files)
        outbox = nil
        outbox = try world.device("ro")
        for _ in 0..<3 where try await outbox!.item(before)?.state != .confirmed {
            world.clock.advance(by: 120_000)
            _ = await outbox!.flush()
        }
        #expect(try await outbox!.item(before)?.state == .confirmed)
        let markers = world.server.documents().compactMap {
            (try? JSONSerialization.jsonObject(with: $0.payload) as? [String: Any])?["customer_reference"] as? String
        }
        #expect(markers == ["before"])
        #expect(world.server.documents().allSatisfy { $0.appliedWrites == 1 })
    }

    @Test func aDiskThatFillsUpDuringAPullFailsClearlyKeepsWholePagesAndCatchesUpLater() async throws {
        try await OffThePool.run {
            let binary = DemoProcessTests.lab
            try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build the lab first (swift build)")
            let world = try World()
            let filler = String(repeating: "x", count: 150)
            try world.server.putRecords(
                (0..<2000).map { n in
                    SyncServer.RecordSeed(
                        type: "Delivery",
                        fields: Data(
                            #"{"courier_id":"ada","status":"assigned","stop_order":\#(n + 1),"address":"Rua \#(n) \#(filler)"}"#.utf8),
                        workspace: "acme")
                })
            let db = world.directory.appendingPathComponent("full.sqlite").path
            let run = try await ProcessRunner.run(
                binary,
                [
                    "torture", "disk-full", "--db", db, "--server", world.server.baseURL.absoluteString,
                    "--refresh-token", try world.server.issueRefreshToken(principal: "ada", workspaces: ["acme"]), "--headroom",
                    String(256 << 10),
                ])
            #expect(run.status == 0, "\(run.output)\n\(run.errors)")
            let failure = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("pull failed: ") }, "\(run.output)")
            #expect(failure.contains("full") || failure.contains("I/O") || failure.contains("disk"), "\(failure)")
            let stored = try #require(
                run.output.split(separator: "\n").first { $0.hasPrefix("stored after the failure: ") }.flatMap {
                    Int($0.split(separator: " ").last!)
                })
            #expect(stored % 50 == 0 && stored < 2000, "a pull that failed mid-page keeps whole pages only: \(stored)")
            #expect(run.output.contains("caught up: 2000 records"), "\(run.output)")
            let reader = try Outbox(
                path: db, forms: FormCatalog.forms, records: FormCatalog.records,
                transport: world.transport(workspace: "acme", principal: "ada"))
            #expect(try await reader.records(Delivery.all).count == 2000)
        }
    }

    private func chattr(_ flag: String, _ paths: [String]) throws {
        let process = try ChildProcess("/usr/bin/chattr", [flag] + paths.filter { FileManager.default.fileExists(atPath: $0) })
        guard process.waitUntilExit() == .exit(0) else {
            throw CocoaError(
                .fileWriteNoPermission,
                userInfo: [NSLocalizedDescriptionKey: "chattr \(flag) needs root on ext4 (the CI machine runs as root)"])
        }
    }
}
