import FormSyncProtocol
import Foundation

/// Devices and credentials (docs/PROTOCOL.md, "Devices and credentials"): enrolment codes
/// spent once, refresh tokens that rotate and catch a copied token, revocation and the
/// back office's routes. Needs the back office's token; the devices it enrols are revoked
/// before it ends.
extension Conformance {
    mutating func deviceChecks() async {
        let rules = [
            Rules.enrolmentMade, Rules.enrolTrades, Rules.enrolOnce, Rules.refreshRotates, Rules.refreshReuse, Rules.revokedRefused,
            Rules.revocationListed, Rules.backOfficeOnly, Rules.supportRequested, Rules.supportAnswered,
        ]
        guard let backOfficeToken else {
            for rule in rules { notChecked(rule, "give --back-office-token") }
            return
        }
        let principal = "conformance-\(run)"
        guard let code = await enrolmentChecked(principal, as: backOfficeToken) else {
            for rule in rules { notChecked(rule, "the server made no enrolment") }
            return
        }
        let enrolled = await enrol(code, installation: "conformance-\(run)-a")
        var works = false
        if let credentials = enrolled.credentials {
            works = await send("GET", "/changes?limit=1", as: credentials.accessToken).status == 200
        }
        check(Rules.enrolTrades, enrolled.reply.status == 201 && works, Self.describe(enrolled.reply))
        guard let first = enrolled.credentials else { return }
        let spent = await enrol(code, installation: "conformance-\(run)-b").reply
        let unknown = await enrol(EnrolmentCode(randomBytes: Array(repeating: 0x5A, count: 13)).description, installation: nil).reply
        check(
            Rules.enrolOnce, spent.code == .enrolmentUsed && unknown.code == .enrolmentUnknown,
            "a spent code: \(Self.describe(spent)); an unknown one: \(Self.describe(unknown))")
        problem(spent, "a spent enrolment code")

        let second = await refresh(first.refreshToken)
        let retried = await refresh(first.refreshToken)
        check(
            Rules.refreshRotates,
            second.credentials.map { $0.refreshToken != first.refreshToken } == true && retried.credentials?.deviceID == first.deviceID,
            "the refresh: \(Self.describe(second.reply)); the retired token again: \(Self.describe(retried.reply))")
        guard let current = retried.credentials else { return }
        let later = await refresh(current.refreshToken)
        let reused = await refresh(first.refreshToken)
        check(
            Rules.refreshReuse, later.reply.status == 200 && reused.reply.status == 401 && reused.reply.code == .deviceRevoked,
            "the successor: \(Self.describe(later.reply)); the retired token after it: \(Self.describe(reused.reply))")
        let access = await send("GET", "/changes?limit=1", as: later.credentials?.accessToken ?? current.accessToken)
        let refreshAgain = await refresh(later.credentials?.refreshToken ?? current.refreshToken).reply
        check(
            Rules.revokedRefused, access.code == .deviceRevoked && refreshAgain.code == .deviceRevoked,
            "an access token: \(Self.describe(access)); a refresh: \(Self.describe(refreshAgain))")

        let listed = await send("GET", "/auth/devices?principal=\(principal)", as: backOfficeToken)
        let devices = (try? JSONDecoder().decode(DeviceList.self, from: listed.data))?.devices ?? []
        let missing = await send(
            "POST", "/auth/revocations", headers: ["Content-Type": "application/json"],
            body: try? JSONEncoder().encode(RevocationRequest(deviceID: "dv-conformance-\(run)-none")), as: backOfficeToken)
        check(
            Rules.revocationListed,
            devices.contains { $0.deviceID == first.deviceID && $0.revokedAt != nil } && missing.status == 404
                && missing.code == .noSuchDevice,
            "the list: \(Self.describe(listed)) (\(devices.count) devices); an unknown device: \(Self.describe(missing))")

        // A device's token on a back-office route, then the principal revoked as a whole.
        guard let another = await makeEnrolment(principal, as: backOfficeToken),
            let device = await enrol(another, installation: "conformance-\(run)-c").credentials
        else { return }
        await supportChecks(device, as: backOfficeToken)
        let refused = await send("GET", "/auth/devices", as: device.accessToken)
        let revoked = await send(
            "POST", "/auth/revocations", headers: ["Content-Type": "application/json"],
            body: try? JSONEncoder().encode(RevocationRequest(principal: principal, reason: "conformance run \(run)")), as: backOfficeToken)
        let revocation = try? JSONDecoder().decode(Revocation.self, from: revoked.data)
        check(
            Rules.backOfficeOnly, refused.status == 403 && refused.code == .backOfficeOnly && revocation?.revoked == [device.deviceID],
            "a device on GET /auth/devices: \(Self.describe(refused)); the principal's revocation: \(Self.describe(revoked))")
    }

    /// Support bundles: the back office asks `device`, the feed carries the request, the device's
    /// bundle answers it; a bundle answering a request that is not the device's is refused.
    private mutating func supportChecks(_ device: Credentials, as backOfficeToken: String) async {
        let json = ["Content-Type": "application/json"]
        let asked = await send(
            "POST", "/support/requests", headers: json,
            body: try? JSONEncoder().encode(SupportRequestCreate(deviceID: device.deviceID, reason: "conformance run \(run)")),
            as: backOfficeToken)
        let request = asked.status == 201 ? try? JSONDecoder().decode(SupportRequest.self, from: asked.data) : nil
        let page = await send("GET", "/changes?limit=1", as: device.accessToken)
        let object = try? JSONSerialization.jsonObject(with: page.data) as? [String: Any]
        let carried = ((object?[FeedPage.supportRequest] as? [String: Any])?["id"] as? NSNumber)?.int64Value
        check(
            Rules.supportRequested, request != nil && carried == request?.id,
            "the request: \(Self.describe(asked)); the feed carried \(carried.map(String.init) ?? "none")")
        guard let request else {
            notChecked(Rules.supportAnswered, "the server made no support request")
            return
        }
        func bundle(answering id: Int64?) -> Data? {
            try? JSONEncoder().encode(
                SupportBundle(
                    createdAt: "2026-12-06T10:00:00Z", answering: id, device: DeviceReport(name: "conformance \(run)"), outboxSchema: 1,
                    workspaces: [], counts: [:], recordsHeld: 0, settings: [:], people: [], revoked: nil, includesPayloads: false,
                    items: []))
        }
        let wrong = await send(
            "POST", "/support/bundles", headers: json, body: bundle(answering: request.id + 1_000_000), as: device.accessToken)
        let answered = await send("POST", "/support/bundles", headers: json, body: bundle(answering: request.id), as: device.accessToken)
        let listed = await send("GET", "/support/bundles?device=\(device.deviceID)", as: backOfficeToken)
        let bundles = (try? JSONDecoder().decode(SupportBundleList.self, from: listed.data))?.bundles ?? []
        let deviceRead = await send("GET", "/support/bundles", as: device.accessToken)
        check(
            Rules.supportAnswered,
            answered.status == 201 && bundles.contains { $0.bundle.answering == request.id } && wrong.status == 404
                && wrong.code == .noSuchSupportRequest && deviceRead.status == 403 && deviceRead.code == .backOfficeOnly,
            "the answer: \(Self.describe(answered)); the list: \(Self.describe(listed)); another request's answer: \(Self.describe(wrong)); a device reading: \(Self.describe(deviceRead))"
        )
    }

    private func makeEnrolment(_ principal: String, as backOfficeToken: String) async -> String? {
        let made = await send(
            "POST", "/auth/enrolments", headers: ["Content-Type": "application/json"],
            body: try? JSONEncoder().encode(EnrolmentRequest(principal: principal, expiresIn: 600)), as: backOfficeToken)
        let enrolment = try? JSONDecoder().decode(Enrolment.self, from: made.data)
        let valid = made.status == 201 && enrolment.flatMap { EnrolmentCode(reading: $0.code) } != nil && enrolment?.principal == principal
        return valid ? enrolment?.code : nil
    }

    private mutating func enrolmentChecked(_ principal: String, as backOfficeToken: String) async -> String? {
        let code = await makeEnrolment(principal, as: backOfficeToken)
        check(Rules.enrolmentMade, code != nil, "no 201 with a code of 20 symbols for principal \(principal)")
        return code
    }

    private func enrol(_ code: String, installation: String?) async -> (reply: Reply, credentials: Credentials?) {
        let reply = await send(
            "POST", "/auth/enrol", headers: ["Content-Type": "application/json"],
            body: try? JSONEncoder().encode(
                EnrolRequest(code: code, installation: installation, device: DeviceReport(name: "conformance \(run)"))),
            authorized: false, workspace: .none)
        return (reply, reply.status == 201 ? try? JSONDecoder().decode(Credentials.self, from: reply.data) : nil)
    }

    private func refresh(_ token: String) async -> (reply: Reply, credentials: Credentials?) {
        let reply = await send(
            "POST", "/auth/refresh", headers: ["Content-Type": "application/json"],
            body: try? JSONEncoder().encode(RefreshRequest(refreshToken: token)), authorized: false, workspace: .none)
        return (reply, reply.status == 200 ? try? JSONDecoder().decode(Credentials.self, from: reply.data) : nil)
    }
}
