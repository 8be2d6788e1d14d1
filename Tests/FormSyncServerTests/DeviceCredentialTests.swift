import CorpusForms
import FormSyncHTTP
import FormSyncProtocol
import FormSyncServer
import FormSyncTesting
import FormSyncTorture
import Foundation
import Synchronization
import Testing

/// Devices and their credentials (docs/PROTOCOL.md, "Devices and credentials"), request by
/// request on the store this run tests: enrolment codes spent once, refresh tokens that rotate
/// and catch a copied token, revocation of one device or a principal's, and the bounds on what
/// each route reads. The server's clock is the test's.
struct DeviceCredentialTests {
    final class Setup: @unchecked Sendable {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("devices-\(UUID().uuidString)")
        let server: SyncServer
        let clock = Clock()
        let office: String

        init() throws {
            let clock = self.clock
            server = try TestStore.server(
                directory: folder.path, forms: FormCatalog.forms, records: FormCatalog.records, now: { clock.now })
            office = try server.issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
        }

        deinit { try? FileManager.default.removeItem(at: folder) }

        func advance(seconds: Int64) { clock.advance(milliseconds: seconds * 1000) }

        /// The server's clock, moved only by the test.
        final class Clock: Sendable {
            private let milliseconds = Atomic<Int64>(1_800_000_000_000)
            var now: Int64 { milliseconds.load(ordering: .relaxed) }
            func advance(milliseconds step: Int64) { milliseconds.add(step, ordering: .relaxed) }
        }

        struct Reply {
            var status: Int
            var body: Data
            var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:] }
            var code: String? { json["code"] as? String }
            func decoded<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(type, from: body) }
        }

        func send(
            _ method: String, _ path: String, query: String? = nil, token: String?, workspace: String? = "acme", body: Data = Data()
        )
            -> Reply
        {
            var headers: [String: String] = [:]
            if let token { headers["authorization"] = "Bearer \(token)" }
            if let workspace { headers["formsync-workspace"] = workspace }
            if !body.isEmpty { headers["content-type"] = "application/json" }
            let response = server.handle(HTTPRequest(method: method, path: path, query: query, headers: headers, body: body))
            return Reply(status: response?.status ?? 0, body: response?.body ?? Data())
        }

        func json<T: Encodable>(_ value: T) -> Data { try! JSONEncoder().encode(value) }

        /// A code for `principal`, made through the back office's route.
        func enrolment(for principal: String, expiresIn: Int64? = nil) throws -> String {
            let reply = send(
                "POST", "/auth/enrolments", token: office, body: json(EnrolmentRequest(principal: principal, expiresIn: expiresIn)))
            try #require(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
            return try reply.decoded(Enrolment.self).code
        }

        func enrol(_ code: String, installation: String? = "install-0001", name: String = "Van 12") -> Reply {
            send(
                "POST", "/auth/enrol", token: nil, workspace: nil,
                body: json(EnrolRequest(code: code, installation: installation, device: DeviceReport(name: name, appVersion: "2.4.1"))))
        }

        func refresh(_ token: String) -> Reply {
            send("POST", "/auth/refresh", token: nil, workspace: nil, body: json(RefreshRequest(refreshToken: token)))
        }

        /// A request only a valid device token passes.
        func pull(_ token: String) -> Reply { send("GET", "/changes", token: token) }

        func devices(principal: String? = nil) throws -> [DeviceSummary] {
            let reply = send("GET", "/auth/devices", query: principal.map { "principal=\($0)" }, token: office)
            try #require(reply.status == 200)
            return try reply.decoded(DeviceList.self).devices
        }

        func revoke(_ request: RevocationRequest) -> Reply {
            send("POST", "/auth/revocations", token: office, body: json(request))
        }
    }

    @Test func anEnrolmentCodeEnrolsOneDeviceOnceAndTheBackOfficeSeesIt() throws {
        let s = try Setup()
        let code = try s.enrolment(for: "courier-7")
        #expect(EnrolmentCode(reading: code)?.description == code, "shown in groups of four")

        let enrolled = s.enrol(code.lowercased().replacingOccurrences(of: "-", with: " "))
        #expect(enrolled.status == 201)
        let credentials = try enrolled.decoded(Credentials.self)
        #expect(credentials.principal == "courier-7" && credentials.workspaces == ["acme"] && credentials.role == "device")
        #expect(credentials.tokenType == "Bearer" && credentials.expiresIn == 3600 && credentials.refreshExpiresIn == 30 * 24 * 3600)
        #expect(s.pull(credentials.accessToken).status == 200)

        let again = s.enrol(code, installation: "another-phone")
        #expect(again.status == 401 && again.code == "enrolment-used")

        let listed = try s.devices(principal: "courier-7")
        #expect(listed.count == 1)
        #expect(listed.first?.deviceID == credentials.deviceID && listed.first?.name == "Van 12" && listed.first?.appVersion == "2.4.1")
        #expect(listed.first?.revokedAt == nil)
    }

    @Test func anExpiredUnknownOrMalformedEnrolmentCodeIsRefusedWithItsOwnCode() throws {
        let s = try Setup()
        let code = try s.enrolment(for: "courier-7", expiresIn: 600)
        s.advance(seconds: 601)
        let expired = s.enrol(code)
        #expect(expired.status == 401 && expired.code == "enrolment-expired")

        let unknown = s.enrol(EnrolmentCode(randomBytes: Array(repeating: 7, count: 13)).description)
        #expect(unknown.status == 401 && unknown.code == "enrolment-unknown")
        for malformed in ["", "ABCD", String(repeating: "A", count: 21), "UUUU-UUUU-UUUU-UUUU-UUUU", String(repeating: "é", count: 20)] {
            let reply = s.enrol(malformed)
            #expect(reply.status == 401 && reply.code == "enrolment-unknown", "\(malformed)")
        }
        #expect(try s.devices().isEmpty, "no attempt made a device")
    }

    @Test func theSameInstallationMayAskAgainForAReplyItLostButOnlyBeforeItRefreshes() throws {
        let s = try Setup()
        let code = try s.enrolment(for: "courier-7")
        let first = try s.enrol(code).decoded(Credentials.self)
        let second = s.enrol(code)
        #expect(second.status == 201)
        let retried = try second.decoded(Credentials.self)
        #expect(retried.deviceID == first.deviceID, "the same device")
        #expect(s.pull(first.accessToken).status == 401, "the reply it never read is dropped")
        #expect(s.refresh(first.refreshToken).code == "bad-token")
        #expect(s.enrol(code, installation: nil).code == "enrolment-used", "no installation id, no second chance")

        #expect(s.refresh(retried.refreshToken).status == 200)
        #expect(s.enrol(code).code == "enrolment-used", "once the device refreshed, the code is spent for good")
        #expect(try s.devices().count == 1)
    }

    @Test func refreshRotatesAndTakesTheRetiredTokenOnceMoreForALostReply() throws {
        let s = try Setup()
        let first = try s.enrol(try s.enrolment(for: "courier-7")).decoded(Credentials.self)

        let second = try s.refresh(first.refreshToken).decoded(Credentials.self)
        #expect(second.refreshToken != first.refreshToken && second.deviceID == first.deviceID)
        // The reply carrying `second` was lost: the device sends the retired token again.
        let third = try s.refresh(first.refreshToken).decoded(Credentials.self)
        #expect(third.deviceID == first.deviceID)
        #expect(s.refresh(second.refreshToken).code == "bad-token", "the successor it never read is dropped")
        #expect(s.pull(third.accessToken).status == 200)

        let fourth = try s.refresh(third.refreshToken).decoded(Credentials.self)
        #expect(s.pull(fourth.accessToken).status == 200)
        #expect(s.pull(third.accessToken).status == 200, "an access token lives its hour")
    }

    @Test func aRetiredRefreshTokenUsedAfterItsSuccessorRevokesTheDevice() throws {
        let s = try Setup()
        let stolen = try s.enrol(try s.enrolment(for: "courier-7")).decoded(Credentials.self)
        let next = try s.refresh(stolen.refreshToken).decoded(Credentials.self)
        let latest = try s.refresh(next.refreshToken).decoded(Credentials.self)

        // A copy of the first refresh token is used after its successor was: someone else has it.
        let replayed = s.refresh(stolen.refreshToken)
        #expect(replayed.status == 401 && replayed.code == "device-revoked")
        #expect(s.refresh(latest.refreshToken).code == "device-revoked", "the device's own token goes with it")
        #expect(s.pull(latest.accessToken).code == "device-revoked")
        let device = try #require(try s.devices().first)
        #expect(device.revokedAt != nil && device.revokedReason == "a retired refresh token was used again")
    }

    @Test func expiredAccessAndRefreshTokensSayWhichExpired() throws {
        let s = try Setup()
        s.server.refreshTokenLifetime = .seconds(7200)
        let credentials = try s.enrol(try s.enrolment(for: "courier-7")).decoded(Credentials.self)
        s.advance(seconds: 3601)
        let expired = s.pull(credentials.accessToken)
        #expect(expired.status == 401 && expired.code == "token-expired")
        s.advance(seconds: 3600)
        let stale = s.refresh(credentials.refreshToken)
        #expect(stale.status == 401 && stale.code == "refresh-expired")
        #expect(s.refresh("r-never-issued").code == "bad-token")
        #expect(s.pull("a-never-issued").code == "bad-token")
    }

    @Test func revokingADeviceRefusesItsNextRequestAndLeavesEveryOtherDevice() throws {
        let s = try Setup()
        let van = try s.enrol(try s.enrolment(for: "courier-7"), installation: "install-van").decoded(Credentials.self)
        let spare = try s.enrol(try s.enrolment(for: "courier-7"), installation: "install-spare").decoded(Credentials.self)
        let other = try s.enrol(try s.enrolment(for: "courier-8"), installation: "install-other").decoded(Credentials.self)
        #expect(s.pull(van.accessToken).status == 200, "the token is known (and cached) before the revocation")

        let revoked = s.revoke(RevocationRequest(deviceID: van.deviceID, reason: "lost on route 12"))
        #expect(revoked.status == 200)
        #expect(try revoked.decoded(Revocation.self).revoked == [van.deviceID])
        #expect(s.pull(van.accessToken).code == "device-revoked")
        #expect(s.refresh(van.refreshToken).code == "device-revoked")
        #expect(s.pull(spare.accessToken).status == 200 && s.pull(other.accessToken).status == 200)
        #expect(try s.revoke(RevocationRequest(deviceID: van.deviceID)).decoded(Revocation.self).revoked.isEmpty, "twice is harmless")

        let all = try s.revoke(RevocationRequest(principal: "courier-7")).decoded(Revocation.self)
        #expect(all.revoked == [spare.deviceID])
        #expect(s.pull(spare.accessToken).code == "device-revoked")
        #expect(s.pull(other.accessToken).status == 200)
        let listed = try s.devices(principal: "courier-7")
        let reasons = Dictionary(uniqueKeysWithValues: listed.map { ($0.deviceID, $0.revokedReason) })
        #expect(reasons == [van.deviceID: "lost on route 12", spare.deviceID: "revoked by office"])

        let missing = s.revoke(RevocationRequest(deviceID: "dv-unknown"))
        #expect(missing.status == 404 && missing.code == "no-such-device")
    }

    @Test func aPrincipalsRevocationTakesItsTokensIssuedWithoutADeviceToo() throws {
        let s = try Setup()
        let access = try s.server.issueAccessToken(principal: "courier-7", workspaces: ["acme"])
        #expect(s.pull(access).status == 200)
        _ = try s.server.revokeDevices(principal: "courier-7", workspace: "acme")
        #expect(s.pull(access).status == 401)
    }

    @Test func anotherWorkspacesBackOfficeNeitherSeesNorRevokesTheDevice() throws {
        let s = try Setup()
        let van = try s.enrol(try s.enrolment(for: "courier-7")).decoded(Credentials.self)
        let globex = try s.server.issueAccessToken(principal: "office", workspaces: ["globex"], role: .backOffice)
        let listed = s.send("GET", "/auth/devices", token: globex, workspace: "globex")
        #expect(try listed.decoded(DeviceList.self).devices.isEmpty)
        let refused = s.send(
            "POST", "/auth/revocations", token: globex, workspace: "globex", body: s.json(RevocationRequest(deviceID: van.deviceID)))
        #expect(refused.code == "no-such-device")
        #expect(s.pull(van.accessToken).status == 200)
    }

    @Test func theBackOfficesRoutesRefuseADevice() throws {
        let s = try Setup()
        let van = try s.enrol(try s.enrolment(for: "courier-7")).decoded(Credentials.self)
        for (method, path) in [("POST", "/auth/enrolments"), ("GET", "/auth/devices"), ("POST", "/auth/revocations")] {
            let reply = s.send(method, path, token: van.accessToken, body: method == "POST" ? Data("{}".utf8) : Data())
            #expect(reply.status == 403 && reply.code == "back-office-only", "\(method) \(path)")
        }
        #expect(s.send("GET", "/auth/devices", token: nil).status == 401)
    }

    @Test func aRefreshTokenFromBeforeDevicesGetsADeviceAtItsFirstRefreshAndRotatesFromThen() throws {
        let s = try Setup()
        let legacy = "r-legacy-\(UUID().uuidString)"
        try s.server.storeRefreshTokenWithoutDevice(legacy, principal: "courier-7", workspaces: ["acme"])
        let first = s.refresh(legacy)
        #expect(first.status == 200)
        let credentials = try first.decoded(Credentials.self)
        #expect(try s.devices(principal: "courier-7").map(\.name) == ["enrolled before devices"])
        #expect(s.pull(credentials.accessToken).status == 200)
        #expect(s.refresh(credentials.refreshToken).status == 200)
        #expect(s.refresh(legacy).code == "device-revoked", "the old token is retired like any other")
    }

    @Test func aDevicesLastSightingMovesWithItsRequestsAtMostOnceAMinute() throws {
        let s = try Setup()
        let van = try s.enrol(try s.enrolment(for: "courier-7")).decoded(Credentials.self)
        let enrolled = try #require(try s.devices().first?.lastSeenAt)
        s.advance(seconds: 30)
        #expect(s.pull(van.accessToken).status == 200)
        #expect(try s.devices().first?.lastSeenAt == enrolled, "within the minute nothing is written")
        s.advance(seconds: 31)
        #expect(s.pull(van.accessToken).status == 200)
        let seen = try #require(try s.devices().first?.lastSeenAt)
        #expect(seen > enrolled)
    }

    @Test func twoDevicesRacingForOneCodeGetOneDevice() async throws {
        let s = try Setup()
        let code = try s.enrolment(for: "courier-7")
        let statuses = await withTaskGroup(of: Int.self) { group in
            for n in 0..<8 {
                group.addTask { await OffThePool.run { s.enrol(code, installation: "install-race-\(n)").status } }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.sorted() == [201] + Array(repeating: 401, count: 7))
        #expect(try s.devices().count == 1)
    }

    @Test func whatTheRoutesReadIsBoundedAndRefusedWithoutLosingAnything() throws {
        let s = try Setup()
        let code = try s.enrolment(for: "courier-7")
        // Device reports and installation ids that break their bounds: refused, the code unspent.
        for name in ["", String(repeating: "x", count: 65), "line\nbreak", "tab\there", "sep\u{2028}arator", "nul\u{0}", "del\u{7F}"] {
            #expect(s.enrol(code, name: name).code == "malformed", "\(name.debugDescription)")
        }
        for installation in ["short", String(repeating: "i", count: 65), "has space ok", "ü-installation"] {
            #expect(s.enrol(code, installation: installation).code == "malformed", "\(installation)")
        }
        for body in ["", "[]", "{", "{\"code\": 7}", String(repeating: "[", count: 4000), "{\"code\":\"\(code)\"}"] {
            let reply = s.send("POST", "/auth/enrol", token: nil, workspace: nil, body: Data(body.utf8))
            #expect(reply.code == "malformed", "\(body.prefix(20))")
        }
        #expect(s.enrol(code).status == 201, "the code survived every refusal")

        // The back office's requests: lifetimes, roles, principals and reasons out of bounds.
        for asked in [
            EnrolmentRequest(principal: "p", expiresIn: 59), EnrolmentRequest(principal: "p", expiresIn: 604_801),
            EnrolmentRequest(principal: "p", expiresIn: .max), EnrolmentRequest(principal: "p", expiresIn: .min),
            EnrolmentRequest(principal: "p", expiresIn: -1), EnrolmentRequest(principal: "p", role: "root"),
            EnrolmentRequest(principal: ""), EnrolmentRequest(principal: String(repeating: "p", count: 129)),
            EnrolmentRequest(principal: "two\nlines"),
        ] {
            let reply = s.send("POST", "/auth/enrolments", token: s.office, body: s.json(asked))
            #expect(reply.status == 400 && reply.code == "malformed", "\(asked)")
        }
        for asked in [
            RevocationRequest(), RevocationRequest(deviceID: "dv-1", principal: "p"), RevocationRequest(principal: "p", reason: "a\nb"),
            RevocationRequest(principal: "p", reason: String(repeating: "r", count: 201)),
        ] {
            #expect(s.revoke(asked).code == "malformed", "\(asked)")
        }
        for query in ["principal=a&principal=b", "who=x", "principal=" + String(repeating: "p", count: 129), "principal=%0A", "%zz=1"] {
            #expect(s.send("GET", "/auth/devices", query: query, token: s.office).code == "bad-query", "\(query)")
        }
        // Refresh tokens of every shape an attacker might send: unknown, never a trap.
        for token in ["", String(repeating: "r", count: 513), "r-\u{0}", "' OR 1=1 --"] {
            #expect(s.refresh(token).status == 401, "\(token.prefix(10))")
        }
        #expect(
            s.send("POST", "/auth/refresh", token: nil, workspace: nil, body: Data(String(repeating: "{", count: 3000).utf8)).code
                == "malformed")
    }
}
