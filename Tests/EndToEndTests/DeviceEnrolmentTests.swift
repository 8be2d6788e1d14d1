import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import FormSyncTesting
import FormSyncTorture
import Foundation
import Synchronization
import Testing

/// A device's credentials end to end, over real HTTP on 127.0.0.1: enrolled from the link an
/// operator shows, its rotated refresh token kept in a vault file across restarts, its work sent
/// under its own credentials, and cut off in one call.
struct DeviceEnrolmentTests {
    final class Phone: @unchecked Sendable {
        let folder: URL
        let server: SyncServer
        let report = DeviceReport(name: "Van 12", appVersion: "2.4.1", specVersion: "corpus-1")

        init(_ folder: URL, server: SyncServer) {
            self.folder = folder
            self.server = server
        }

        var vault: FileCredentialVault { FileCredentialVault(path: folder.appendingPathComponent("credentials.json").path) }

        /// The app's credentials, opened (again) from the vault file.
        func credentials() async throws -> DeviceCredentials {
            try await DeviceCredentials(vault: vault, device: report)
        }

        /// The app's outbox, sending under `credentials`.
        func outbox(_ credentials: DeviceCredentials) throws -> Outbox {
            let transport = HTTPTransport(workspace: "acme", baseURL: server.baseURL, timeout: .seconds(120)) {
                await credentials.accessToken()
            }
            return try Outbox(
                path: folder.appendingPathComponent("outbox.sqlite").path, forms: FormCatalog.forms, records: FormCatalog.records,
                transport: transport, refreshAuthentication: { await credentials.refresh() })
        }
    }

    static func world() throws -> (URL, SyncServer) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("enrol-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let server = try TestStore.server(
            directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms, records: FormCatalog.records)
        _ = try server.start()
        return (folder, server)
    }

    static func link(_ server: SyncServer, principal: String) throws -> EnrolmentLink {
        let made = try server.makeEnrolment(principal: principal, workspace: "acme")
        let text = EnrolmentLink(server: server.baseURL.absoluteString, workspace: "acme", code: made.code).description
        // What the app gets is the text of the QR code: it reads it back.
        return try #require(EnrolmentLink(parsing: text))
    }

    @Test func aDeviceEnrolsFromALinkSendsItsWorkAndKeepsItsRotatedTokenAcrossRestarts() async throws {
        let (folder, server) = try Self.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let phone = Phone(folder, server: server)
        let link = try Self.link(server, principal: "courier-7")
        let credentials = try await phone.credentials()
        #expect(await credentials.status == .notEnrolled)
        let enrolled = try await credentials.enrol(link, installation: "install-van-12")
        #expect(await credentials.status == .enrolled(deviceID: enrolled.deviceID, principal: "courier-7"))

        let outbox = try phone.outbox(credentials)
        try await outbox.enqueue(NewCustomer(name: "Harbour café", segment: .retail))
        #expect(await outbox.flush().sent == 1)
        #expect(server.documents().count == 1)

        // Restarts: each launch has no access token; the first request's 401 refreshes, and the
        // vault keeps each new refresh token, so the next launch presents the current one.
        var previous = try #require(try phone.vault.load()?.refreshToken)
        for customer in 1...3 {
            let relaunched = try await phone.credentials()
            #expect(await relaunched.accessToken() == nil)
            let outbox = try phone.outbox(relaunched)
            try await outbox.enqueue(NewCustomer(name: "Shop \(customer)", segment: .retail))
            #expect(await outbox.flush().sent == 1)
            let kept = try #require(try phone.vault.load()?.refreshToken)
            #expect(kept != previous, "the vault holds the rotated token")
            previous = kept
        }
        #expect(server.documents().count == 4)
        let listed = try server.devices(workspace: "acme", principal: "courier-7")
        #expect(listed.count == 1 && listed.first?.revokedAt == nil && listed.first?.name == "Van 12")
        #expect(listed.first?.specVersion == "corpus-1")
    }

    @Test func aRevokedDeviceStopsSendingKeepsItsWorkAndTellsTheApp() async throws {
        let (folder, server) = try Self.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let phone = Phone(folder, server: server)
        let credentials = try await phone.credentials()
        let enrolled = try await credentials.enrol(try Self.link(server, principal: "courier-7"), installation: "install-van-12")
        let told = Mutex<[String]>([])
        await credentials.onRevocation { reason in told.withLock { $0.append(reason) } }
        let outbox = try phone.outbox(credentials)
        try await outbox.enqueue(NewCustomer(name: "Before", segment: .retail))
        #expect(await outbox.flush().sent == 1)

        try #require(try server.revokeDevice(enrolled.deviceID, workspace: "acme", reason: "lost on route 12") == [enrolled.deviceID])
        try await outbox.enqueue(NewCustomer(name: "After", segment: .retail))
        let report = await outbox.flush()
        #expect(report.sent == 0 && report.remaining == 1, "nothing goes out, nothing is dropped")
        #expect(await credentials.status == .revoked(reason: told.withLock { $0.first } ?? "?"))
        #expect(told.withLock { $0.count } == 1 && told.withLock { $0.first }?.contains("lost on route 12") == true)
        #expect(try phone.vault.load()?.revokedReason != nil, "the revocation outlives a restart")
        let relaunched = try await phone.credentials()
        #expect(await relaunched.accessToken() == nil)
        let refreshedAgain = await relaunched.refresh()
        #expect(!refreshedAgain)
        #expect(server.documents().count == 1)
        let refreshes = server.requestLog().filter { $0.path == "/auth/refresh" }.count
        _ = await outbox.flush()
        #expect(server.requestLog().filter { $0.path == "/auth/refresh" }.count == refreshes, "a revoked device asks for no refresh again")
    }

    @Test func aRevokedDeviceSealsWhatItHadNotSentPurgesWhatThePolicySaysAndStopsItsEngine() async throws {
        let (folder, server) = try Self.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let phone = Phone(folder, server: server)
        let credentials = try await phone.credentials()
        let enrolled = try await credentials.enrol(try Self.link(server, principal: "courier-7"), installation: "install-van-12")
        let outbox = try phone.outbox(credentials)
        await credentials.onRevocation { reason in _ = try? await outbox.deviceRevoked(reason: reason, purge: .all) }
        _ = try server.putRecord(Delivery(courierId: "courier-7", status: .assigned, stopOrder: 1, address: "Rua 1"), workspace: "acme")
        _ = try await outbox.pull()
        #expect(try await outbox.storedRecordCount() == 1)
        try await outbox.enqueue(NewCustomer(name: "Delivered before", segment: .retail))
        #expect(await outbox.flush().sent == 1)

        try #require(try server.revokeDevice(enrolled.deviceID, workspace: "acme", reason: "lost on route 12") != nil)
        try await outbox.enqueue(NewCustomer(name: "Captured before the news", segment: .retail))
        try await outbox.enqueue(NewCustomer(name: "Also before", segment: .retail))
        let engine = SyncEngine(outbox: outbox)
        await engine.run()  // it returns: the device is revoked
        guard case .revoked(let reason) = engine.state else {
            Issue.record("the engine is \(engine.state), not revoked")
            return
        }
        #expect(reason.contains("lost on route 12"))
        #expect(try await outbox.items(in: [.sealed]).count == 2, "kept, sealed")
        #expect(try await outbox.storedRecordCount() == 0, "the pulled records went, as the policy said")
        try await outbox.enqueue(NewCustomer(name: "Captured after", segment: .retail))
        #expect(try await outbox.items(in: [.sealed]).map { $0.payload != nil } == [true, true, true])
        #expect(await outbox.flush().deviceRevoked != nil)
        let feedRequests = server.requestLog().filter { $0.path == "/changes" }.count
        _ = try await outbox.pull()
        #expect(server.requestLog().filter { $0.path == "/changes" }.count == feedRequests, "a revoked device pulls nothing")
        #expect(server.documents().count == 1, "nothing sealed reached the server")

        // A support person reads the sealed work from the file, the app closed or not.
        let inspector = try OutboxInspector(path: folder.appendingPathComponent("outbox.sqlite").path)
        let sealed = try inspector.items(workspace: nil, in: [.sealed])
        #expect(sealed.count == 3 && sealed.allSatisfy { $0.lastError?.contains("lost on route 12") == true })
        #expect(try inspector.revocation()?.reason.contains("lost on route 12") == true)
        let printed = try await ProcessRunner.run(
            DemoProcessTests.formsync, ["outbox", "inspect", folder.appendingPathComponent("outbox.sqlite").path])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(printed.output.utf8)) as? [String: Any], "\(printed.output)")
        #expect((report["sealed"] as? [[String: Any]])?.count == 3, "\(printed.output)")
        #expect((report["revoked"] as? [String: Any])?["reason"] as? String == reason)

        // Enrolled again: new work goes out under the new credential; the sealed work never does.
        let fresh = try await phone.credentials()
        #expect(await fresh.status == .revoked(reason: reason))
        try await fresh.enrol(try Self.link(server, principal: "courier-7"), installation: "install-van-12")
        let reopened = try phone.outbox(fresh)
        let kept = await reopened.revocation
        #expect(kept?.reason.contains("lost on route 12") == true, "the revocation outlives a restart")
        try await reopened.clearRevocation()
        try await reopened.enqueue(NewCustomer(name: "After enrolling again", segment: .retail))
        #expect(await reopened.flush().sent == 1)
        #expect(try await reopened.items(in: [.sealed]).count == 3)
        #expect(server.documents().count == 2)
    }

    @Test func refreshesAskedAtOnceGoOutOneAtATimeAndNeverRevokeTheDevice() async throws {
        let (folder, server) = try Self.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let phone = Phone(folder, server: server)
        let credentials = try await phone.credentials()
        try await credentials.enrol(try Self.link(server, principal: "courier-7"), installation: "install-van-12")
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { await credentials.refresh() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0 })
        #expect(await credentials.refresh(), "the device is still enrolled")
        let refreshes = server.requestLog().filter { $0.path == "/auth/refresh" }.count
        #expect(refreshes >= 2 && refreshes <= 9)
        #expect(try server.devices(workspace: "acme").first?.revokedAt == nil)
    }

    @Test func formsyncServePrintsALinkThatEnrolsOneDevice() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("serve-enrol-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try ChildProcess(
            DemoProcessTests.formsync.path,
            ["serve", "--port", "0", "--db", folder.appendingPathComponent("db").path, "--principal", "courier-7"],
            standardOutput: .pipe, standardError: .discard)
        defer {
            server.signal()
            server.waitUntilExit()
        }
        let text = await OffThePool.run { server.readOutput(until: "access token:") }
        #expect(!text.contains("refresh token"), "no raw device token is printed")
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("enrolment link") }, "\(text)")
        let link = try #require(EnrolmentLink(parsing: String(line.split(separator: " ").last ?? "")), "\(line)")
        #expect(link.workspace == "default")

        let vault = FileCredentialVault(path: folder.appendingPathComponent("credentials.json").path)
        let credentials = try await DeviceCredentials(vault: vault, device: DeviceReport(name: "Demo phone"))
        let enrolled = try await credentials.enrol(link, installation: "install-demo-1")
        #expect(enrolled.principal == "courier-7")
        let again = try await DeviceCredentials(
            vault: FileCredentialVault(path: folder.appendingPathComponent("other.json").path), device: DeviceReport(name: "Second phone"))
        await #expect(throws: DeviceCredentials.EnrolmentError.self) { try await again.enrol(link, installation: "install-demo-2") }
        #expect(await credentials.refresh())
    }

    @Test func theBackOfficeEnrolsListsAndRevokesDevicesFromTheCommandLine() async throws {
        let (folder, server) = try Self.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let office = try server.issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
        let base = ["devices", "--server", server.baseURL.absoluteString, "--workspace", "acme"]
        let environment = ["FORMSYNC_TOKEN": office]
        let enrolled = try await ProcessRunner.run(DemoProcessTests.formsync, base + ["--enrol", "courier-9"], environment: environment)
        #expect(enrolled.status == 0, "\(enrolled.errors)")
        let link = try #require(
            EnrolmentLink(parsing: enrolled.output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(enrolled.output)")
        let credentials = try await DeviceCredentials(
            vault: FileCredentialVault(path: folder.appendingPathComponent("v.json").path), device: DeviceReport(name: "Van 9"))
        let device = try await credentials.enrol(link, installation: "install-van-9")

        let listed = try await ProcessRunner.run(DemoProcessTests.formsync, base + ["--principal", "courier-9"], environment: environment)
        let devices = try JSONDecoder().decode(DeviceList.self, from: Data(listed.output.utf8)).devices
        #expect(devices.map(\.deviceID) == [device.deviceID] && devices.first?.name == "Van 9")

        let revoked = try await ProcessRunner.run(
            DemoProcessTests.formsync, base + ["--revoke-principal", "courier-9", "--reason", "lost"], environment: environment)
        #expect(revoked.status == 0 && revoked.output.contains(device.deviceID), "\(revoked.output) \(revoked.errors)")
        #expect(!(await credentials.refresh()))
        #expect(await credentials.status == .revoked(reason: (await credentials.credentials)?.revokedReason ?? ""))

        // A device's token, no token, an absurd lifetime: refused with a reason, exit 1 or 2.
        let asDevice = try await ProcessRunner.run(
            DemoProcessTests.formsync, base + ["--enrol", "x"], environment: ["FORMSYNC_TOKEN": device.accessToken])
        #expect(asDevice.status == 1 && asDevice.errors.contains("refused"), "\(asDevice.errors)")
        let noToken = try await ProcessRunner.run(DemoProcessTests.formsync, base, environment: ["FORMSYNC_TOKEN": ""])
        #expect(noToken.status == 2 && noToken.errors.contains("FORMSYNC_TOKEN"))
        let absurd = try await ProcessRunner.run(
            DemoProcessTests.formsync, base + ["--enrol", "x", "--expires", "99999999999999999999"], environment: environment)
        #expect(absurd.status == 2)
    }

    @Test func aPrincipalOfAnySpellingIsListedAndRevokedByName() async throws {
        let (folder, server) = try Self.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let office = try server.issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
        let transport = HTTPTransport(workspace: "acme", baseURL: server.baseURL) { office }
        for principal in ["a+b", "c&d=e", "Zoë Ñ", "x%41y", "p?q#r/s"] {
            guard case .done(let enrolment) = await transport.makeEnrolment(EnrolmentRequest(principal: principal)) else {
                Issue.record("no enrolment for \(principal)")
                continue
            }
            #expect(enrolment.principal == principal)
            let credentials = try await DeviceCredentials(
                vault: FileCredentialVault(path: folder.appendingPathComponent("v-\(UUID().uuidString).json").path),
                device: DeviceReport(name: "Phone"))
            let code = try #require(EnrolmentCode(reading: enrolment.code))
            let link = EnrolmentLink(server: server.baseURL.absoluteString, workspace: "acme", code: code)
            let device = try await credentials.enrol(link, installation: "install-\(UUID().uuidString.prefix(8))")
            guard case .done(let list) = await transport.devices(principal: principal) else {
                Issue.record("no list for \(principal)")
                continue
            }
            #expect(list.devices.map(\.deviceID) == [device.deviceID], "\(principal)")
            guard case .done(let revoked) = await transport.revoke(RevocationRequest(principal: principal)) else {
                Issue.record("no revocation for \(principal)")
                continue
            }
            #expect(revoked.revoked == [device.deviceID], "\(principal)")
        }
    }

    @Test func aLinkIsReadOnlyWhenItNamesAServerADeviceMaySendACodeTo() {
        let code = EnrolmentCode(randomBytes: Array(0..<13))
        let good = EnrolmentLink(server: "https://sync.example.com/acme", workspace: "acme", code: code)
        #expect(EnrolmentLink(parsing: good.description) == good)
        #expect(EnrolmentLink(parsing: EnrolmentLink(server: "http://127.0.0.1:8080", workspace: "acme", code: code).description) != nil)
        for text in [
            "formsync://enrol?server=http%3A%2F%2Fexample.com&workspace=acme&code=\(code)",  // plain http to another host
            "formsync://enrol?server=https%3A%2F%2Fuser%40example.com&workspace=acme&code=\(code)",
            "formsync://enrol?server=https%3A%2F%2Fexample.com%3Fx%3D1&workspace=acme&code=\(code)",
            "formsync://enrol?server=ftp%3A%2F%2Fexample.com&workspace=acme&code=\(code)",
            "formsync://enrol?server=https%3A%2F%2Fexample.com&workspace=acme&code=\(code)&code=\(code)",
            "formsync://enrol?server=https%3A%2F%2Fexample.com&workspace=ac%20me&code=\(code)",
            "formsync://enrol?server=https%3A%2F%2Fexample.com&workspace=acme&code=short",
            "formsync://enrol?server=https%3A%2F%2Fexample.com&workspace=acme&code=\(code)&extra=1",
            "formsync://enrol?server=https%3A%2F%2Fexample.com&workspace=acme&code=%ZZ",
            "https://example.com/enrol?workspace=acme&code=\(code)",
            "formsync://enrol?" + String(repeating: "a", count: 3000),
        ] {
            #expect(EnrolmentLink(parsing: text) == nil, "\(text.prefix(90))")
        }
    }

    @Test func aCodeIsReadAsPeopleTypeItAndItsBitsAreAllUsed() {
        let code = EnrolmentCode(randomBytes: [0xFF, 0, 0x55, 0xAA, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        #expect(code.symbols.count == 20 && code.description.count == 24)
        #expect(EnrolmentCode(reading: code.description.lowercased()) == code)
        let lookalikes = code.symbols.replacingOccurrences(of: "0", with: "O").replacingOccurrences(of: "1", with: "l")
        #expect(EnrolmentCode(reading: lookalikes) == code)
        var distinct: Set<String> = []
        for byte in 0..<13 {
            var bytes = [UInt8](repeating: 0, count: 13)
            bytes[byte] = 0x80
            distinct.insert(EnrolmentCode(randomBytes: bytes).symbols)
        }
        #expect(distinct.count == 13, "each byte reaches the code")
    }

    @Test func aVaultFileIsTheOwnersAloneAndRefusesWhatIsNotAVault() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("vault-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let vault = FileCredentialVault(path: folder.appendingPathComponent("v.json").path)
        #expect(try vault.load() == nil)
        let kept = StoredCredentials(
            server: "https://s.example", deviceID: "dv-1", principal: "p", role: "device", workspaces: ["acme"], refreshToken: "r-1")
        try vault.save(kept)
        #expect(try vault.load() == kept)
        let mode = try FileManager.default.attributesOfItem(atPath: vault.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        try vault.save(nil)
        #expect(try vault.load() == nil)

        try Data(repeating: 0x41, count: 100_000).write(to: URL(fileURLWithPath: vault.path))
        #expect(throws: FileCredentialVault.Failure.self) { try vault.load() }
        try Data("{\"server\": 1}".utf8).write(to: URL(fileURLWithPath: vault.path))
        #expect(throws: FileCredentialVault.Failure.self) { try vault.load() }
        try FileManager.default.removeItem(atPath: vault.path)
        try FileManager.default.createSymbolicLink(atPath: vault.path, withDestinationPath: "/etc/hostname")
        #expect(throws: FileCredentialVault.Failure.self) { try vault.load() }
    }
}
