import FormSyncProtocol
import Foundation
import Testing

@testable import FormSyncClient

/// What a device makes of a server's answer to an enrolment or a refresh: credentials are kept
/// only when they keep the protocol's bounds, a refusal is read by its code, and anything else
/// (a portal's page, a redirect, a lie) is "no server answered", which changes nothing. The
/// network is a closure standing in for the server.
struct CredentialExchangeTests {
    static func transport(status: Int, contentType: String = "application/json", body: String) -> HTTPTransport {
        HTTPTransport(
            workspace: "acme", baseURL: URL(string: "https://sync.example.com")!,
            network: { _, _ in (status, ["content-type": contentType], Data(body.utf8)) }, token: { nil })
    }

    static func credentials(
        deviceID: String = "dv-1", principal: String = "courier-7", workspaces: [String] = ["acme"], access: String = "a-1",
        refresh: String = "r-1", expiresIn: Int64 = 3600, refreshExpiresIn: Int64 = 2_592_000
    ) -> String {
        let value = Credentials(
            deviceID: deviceID, principal: principal, role: "device", workspaces: workspaces, accessToken: access, expiresIn: expiresIn,
            refreshToken: refresh, refreshExpiresIn: refreshExpiresIn)
        return String(decoding: try! JSONEncoder().encode(value), as: UTF8.self)
    }

    static let request = EnrolRequest(code: "7KQM-3RTX-A9PD-W2HE-N6FB", installation: "install-1", device: DeviceReport(name: "Van"))

    @Test func plausibleCredentialsAreIssued() async {
        let reply = await Self.transport(status: 201, body: Self.credentials()).enrol(Self.request)
        guard case .issued(let credentials) = reply else {
            Issue.record("\(reply)")
            return
        }
        #expect(credentials.deviceID == "dv-1" && credentials.refreshToken == "r-1")
    }

    @Test(arguments: [
        credentials(deviceID: ""), credentials(deviceID: "dv with spaces"), credentials(deviceID: String(repeating: "d", count: 200)),
        credentials(principal: ""), credentials(principal: "two\nlines"), credentials(workspaces: ["bad workspace"]),
        credentials(workspaces: (0..<65).map { "w\($0)" }), credentials(access: ""),
        credentials(access: String(repeating: "a", count: 513)),
        credentials(refresh: ""), credentials(refresh: String(repeating: "r", count: 100_000)), credentials(expiresIn: 0),
        credentials(expiresIn: -1), credentials(refreshExpiresIn: .min), "{}", "[]", "not json", String(repeating: "[", count: 5000),
    ])
    func credentialsOutsideTheProtocolsBoundsAreNotTaken(_ body: String) async {
        let reply = await Self.transport(status: 201, body: body).enrol(Self.request)
        guard case .unreachable = reply else {
            Issue.record("taken: \(reply)")
            return
        }
    }

    @Test func aRefusalIsReadByItsCodeAndAnythingElseIsNoAnswer() async {
        let revoked = await Self.transport(
            status: 401, contentType: "application/problem+json", body: #"{"code": "device-revoked", "detail": "lost"}"#
        ).refresh(RefreshRequest(refreshToken: "r-1"))
        #expect(revoked == .refused(code: .deviceRevoked, detail: "lost"))
        let unknownCode = await Self.transport(status: 401, contentType: "application/problem+json", body: #"{"code": "made-up"}"#).refresh(
            RefreshRequest(refreshToken: "r-1"))
        #expect(unknownCode == .refused(code: nil, detail: ""))
        for (status, contentType, body) in [
            (200, "text/html", "<html>Log in to the Wi-Fi</html>"), (302, "text/html", ""),
            (503, "application/problem+json", #"{"code": "busy"}"#),
            (429, "application/problem+json", #"{"code": "rate-limited"}"#), (401, "text/plain", "no"),
            (200, "application/json", Self.credentials()),  // a refresh answers 200, an enrolment 201
        ] {
            let reply = await Self.transport(status: status, contentType: contentType, body: body).enrol(Self.request)
            guard case .unreachable = reply else {
                Issue.record("\(status) \(contentType): \(reply)")
                continue
            }
        }
    }

    @Test func aHostileAnswerToAnEnrolmentLeavesTheVaultAsItWas() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-vault-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let vault = FileCredentialVault(path: folder.appendingPathComponent("v.json").path)
        let credentials = try await DeviceCredentials(
            vault: vault, device: DeviceReport(name: "Van"),
            transport: { _, _ in Self.transport(status: 201, body: Self.credentials(refresh: String(repeating: "r", count: 9_999))) })
        let link = EnrolmentLink(
            server: "https://sync.example.com", workspace: "acme", code: EnrolmentCode(randomBytes: Array(repeating: 1, count: 13)))
        await #expect(throws: DeviceCredentials.EnrolmentError.self) { try await credentials.enrol(link, installation: "install-1") }
        #expect(try vault.load() == nil)
        #expect(await credentials.status == .notEnrolled)
    }

    @Test func aDeviceReportOutsideTheBoundsIsRefusedBeforeAnythingIsSent() async {
        let vault = FileCredentialVault(path: "/nonexistent/never-read.json")
        for report in [
            DeviceReport(name: ""), DeviceReport(name: String(repeating: "n", count: 65)), DeviceReport(name: "two\nlines"),
            DeviceReport(name: "Van", appVersion: String(repeating: "9", count: 65)), DeviceReport(name: "Van", specVersion: "a\u{2028}b"),
        ] {
            await #expect(throws: DeviceCredentials.EnrolmentError.self) { _ = try await DeviceCredentials(vault: vault, device: report) }
        }
    }
}
