import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// Devices and their credentials (docs/PROTOCOL.md, "Devices and credentials"): a device
/// enrols with a single-use code the back office made, refreshes by trading its refresh token
/// for a new one (a retired token presented again after its successor was used revokes the
/// device), and is revoked in one call, alone or with every device of its principal. Every
/// change is one transaction; on PostgreSQL the device's row is locked for it, so that two
/// nodes never rotate the same device at once.
struct DeviceService: ServerPart {
    let context: ServerContext

    /// Access and refresh tokens for a new or rotated device generation.
    private struct Issued {
        var access: String
        var refresh: String
    }

    // MARK: Enrolment

    /// `POST /auth/enrolments` (back office): a code that enrols one device for a principal in
    /// the workspace the request names.
    func createEnrolment(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        guard let asked = Self.decode(EnrolmentRequest.self, request.body) else {
            return .problem(.malformed, detail: "send {\"principal\": \"…\", \"role\": \"device\", \"expires_in\": seconds}")
        }
        guard let role = SyncServer.Role(rawValue: asked.role ?? SyncServer.Role.device.rawValue) else {
            return .problem(.malformed, detail: "role is device or back-office")
        }
        let seconds = asked.expiresIn ?? CredentialRules.defaultEnrolmentSeconds
        guard CredentialRules.enrolmentSeconds.contains(seconds) else {
            return .problem(
                .malformed,
                detail:
                    "expires_in is \(CredentialRules.enrolmentSeconds.lowerBound) to \(CredentialRules.enrolmentSeconds.upperBound) seconds"
            )
        }
        do {
            let made = try locked {
                try store.transaction {
                    try makeEnrolment(
                        SyncServer.Grant(principal: asked.principal, workspaces: [caller.workspace], role: role), seconds: seconds,
                        by: caller.principal)
                }
            }
            return Self.encoded(
                201,
                Enrolment(
                    code: made.code.description, principal: asked.principal, role: role.rawValue, workspace: caller.workspace,
                    expiresAt: WireSyntax.timestamp(made.expiresAt)))
        } catch let error as SyncServer.GrantError {
            return .problem(.malformed, detail: error.reason)
        } catch {
            return failure(error, "enrolment")
        }
    }

    /// A new enrolment code for `grant`, valid `seconds` from now; inside a transaction.
    func makeEnrolment(_ grant: SyncServer.Grant, seconds: Int64, by creator: String) throws -> (code: EnrolmentCode, expiresAt: Int64) {
        try AccessControl.check(grant)
        var generator = SystemRandomNumberGenerator()
        let code = EnrolmentCode(randomBytes: (0..<13).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let now = now()
        let expiresAt = now.addingReportingOverflow(seconds.multipliedReportingOverflow(by: 1000).partialValue).partialValue
        try store.addEnrolment(
            digest: Self.digest(code), StoredEnrolment(grant: grant, createdAt: now, expiresAt: expiresAt, createdBy: creator))
        return (code, expiresAt)
    }

    /// `POST /auth/enrol`: a device's first credentials for an enrolment code. A code is spent
    /// once; the same installation may ask again (its reply was lost) while the code has not
    /// expired and the device has not refreshed since.
    func enrol(_ request: HTTPRequest) -> HTTPResponse {
        guard let asked = Self.decode(EnrolRequest.self, request.body) else {
            return .problem(.malformed, detail: "send {\"code\": \"…\", \"installation\": \"…\", \"device\": {\"name\": \"…\"}}")
        }
        if let problem = asked.device.problem { return .problem(.malformed, detail: problem) }
        if let installation = asked.installation, !CredentialRules.isInstallationID(installation) {
            return .problem(.malformed, detail: "installation is 8 to 64 characters from A-Z a-z 0-9 - _ .")
        }
        guard let code = EnrolmentCode(reading: asked.code) else {
            return .problem(.enrolmentUnknown, detail: "this is not an enrolment code of this server")
        }
        do {
            return try locked {
                try store.transaction { () -> HTTPResponse in
                    let digest = Self.digest(code)
                    guard let enrolment = try store.enrolment(digest: digest) else {
                        return .problem(.enrolmentUnknown, detail: "this is not an enrolment code of this server")
                    }
                    let now = now()
                    guard enrolment.expiresAt > now else {
                        return .problem(.enrolmentExpired, detail: "this enrolment code expired; ask for a new one")
                    }
                    if enrolment.usedAt != nil {
                        guard let installation = asked.installation, installation == enrolment.installation, let id = enrolment.device,
                            var device = try store.device(id), device.revokedAt == nil, device.previousGeneration == nil
                        else {
                            return .problem(.enrolmentUsed, detail: "this enrolment code was used; ask for a new one")
                        }
                        // The same installation again: its reply was lost. The tokens it never read go.
                        try store.removeTokens(device: id, generation: device.currentGeneration)
                        device.lastSeenAt = now
                        return try credentials(rotating: &device, keepPrevious: true, report: asked.device, status: 201)
                    }
                    var device = StoredDevice(
                        id: "dv-" + UUID().uuidString.lowercased(), grant: enrolment.grant, name: asked.device.name,
                        appVersion: asked.device.appVersion, specVersion: asked.device.specVersion, installation: asked.installation,
                        enrolledAt: now, lastSeenAt: now, currentGeneration: 0, previousGeneration: nil, nextGeneration: 1, revokedAt: nil,
                        revokedReason: nil)
                    try store.addDevice(device)
                    try store.useEnrolment(digest: digest, device: device.id, installation: asked.installation, at: now)
                    return try credentials(rotating: &device, keepPrevious: true, report: asked.device, status: 201)
                }
            }
        } catch {
            return failure(error, "enrolment")
        }
    }

    // MARK: Refresh

    /// `POST /auth/refresh`: the device's current refresh token for a new access token and the
    /// refresh token that replaces it. The token it replaced (the previous one) is taken once
    /// more, for a device that never read this reply, while the new one has not been used; any
    /// older token presented again means a copy is in other hands, and revokes the device.
    func refresh(_ request: HTTPRequest) -> HTTPResponse {
        guard let asked = Self.decode(RefreshRequest.self, request.body) else {
            return .problem(.malformed, detail: "send {\"refresh_token\": \"…\"}")
        }
        if let problem = asked.device?.problem { return .problem(.malformed, detail: problem) }
        guard asked.refreshToken.utf8.count <= CredentialRules.maxCredentialBytes else {
            return .problem(.badToken, detail: "unknown refresh token")
        }
        do {
            return try locked {
                let reply = try store.transaction { () -> (HTTPResponse, revoked: Bool) in
                    guard let found = try store.grant(ofToken: asked.refreshToken, kind: "refresh") else {
                        return (.problem(.badToken, detail: "unknown refresh token"), false)
                    }
                    let now = now()
                    var device: StoredDevice
                    var generation: Int64
                    if let id = found.device, let known = try store.device(id), let tokenGeneration = found.generation {
                        device = known
                        generation = tokenGeneration
                    } else {
                        // A refresh token from before devices: it becomes its own device's first generation.
                        guard found.expiresAt > now else { return (Self.refreshExpired(), false) }
                        device = StoredDevice(
                            id: "dv-" + UUID().uuidString.lowercased(), grant: found.grant, name: "enrolled before devices", appVersion: "",
                            specVersion: "", installation: nil, enrolledAt: now, lastSeenAt: now, currentGeneration: 1,
                            previousGeneration: nil, nextGeneration: 2, revokedAt: nil, revokedReason: nil)
                        try store.addDevice(device)
                        try store.assignToken(asked.refreshToken, kind: "refresh", device: device.id, generation: 1)
                        generation = 1
                    }
                    if device.revokedAt != nil { return (Self.revoked(device), false) }
                    guard found.expiresAt > now else { return (Self.refreshExpired(), false) }
                    device.lastSeenAt = now
                    if generation == device.currentGeneration {
                        return (try credentials(rotating: &device, keepPrevious: false, report: asked.device, status: 200), false)
                    }
                    if generation == device.previousGeneration {
                        // Its successor was never used: the reply that carried it was lost.
                        try store.removeTokens(device: device.id, generation: device.currentGeneration)
                        return (try credentials(rotating: &device, keepPrevious: true, report: asked.device, status: 200), false)
                    }
                    device.revokedAt = now
                    device.revokedReason = "a retired refresh token was used again"
                    try store.updateDevice(device)
                    return (Self.revoked(device), true)
                }
                if reply.revoked { forgetCachedTokens() }
                return reply.0
            }
        } catch {
            return failure(error, "refresh")
        }
    }

    /// Issues the device's next generation (`keepPrevious`: the previous generation stays the
    /// one before; otherwise the current one becomes it) and answers with its credentials.
    private func credentials(
        rotating device: inout StoredDevice, keepPrevious: Bool, report: DeviceReport?, status: Int
    ) throws
        -> HTTPResponse
    {
        let now = now()
        if !keepPrevious { device.previousGeneration = device.currentGeneration }
        device.currentGeneration = device.nextGeneration
        device.nextGeneration += 1
        if let report {
            device.name = report.name
            device.appVersion = report.appVersion
            device.specVersion = report.specVersion
        }
        let issued = try issue(for: device)
        try store.removeTokens(device: device.id, expiredBefore: now)
        try store.updateDevice(device)
        context.sightings.record(device.id, now: now)
        return Self.encoded(
            status,
            Credentials(
                deviceID: device.id, principal: device.grant.principal, role: device.grant.role.rawValue,
                workspaces: device.grant.workspaces,
                accessToken: issued.access, expiresIn: context.tokenLifetimeMilliseconds / 1000, refreshToken: issued.refresh,
                refreshExpiresIn: settings.refreshLifetimeMilliseconds / 1000))
    }

    /// The access and refresh tokens of the device's current generation.
    private func issue(for device: StoredDevice) throws -> Issued {
        let now = now()
        let generation = (device.id, device.currentGeneration)
        let refresh = try access.issueToken(
            kind: "refresh", grant: device.grant, expiresAt: now.addingReportingOverflow(settings.refreshLifetimeMilliseconds).partialValue,
            device: generation)
        let token = try access.issueToken(
            kind: "access", grant: device.grant, expiresAt: now.addingReportingOverflow(context.tokenLifetimeMilliseconds).partialValue,
            device: generation)
        return Issued(access: token, refresh: refresh)
    }

    /// A device for `grant` with its first refresh token, made by the server itself (tests and
    /// `formsync serve` before enrolment); inside a transaction.
    func issueDeviceToken(_ grant: SyncServer.Grant, name: String) throws -> String {
        try AccessControl.check(grant)
        let now = now()
        let device = StoredDevice(
            id: "dv-" + UUID().uuidString.lowercased(), grant: grant, name: name, appVersion: "", specVersion: "", installation: nil,
            enrolledAt: now, lastSeenAt: now, currentGeneration: 1, previousGeneration: nil, nextGeneration: 2, revokedAt: nil,
            revokedReason: nil)
        try store.addDevice(device)
        return try issue(for: device).refresh
    }

    // MARK: Devices

    /// `GET /auth/devices` (back office): the workspace's devices, of one principal or all.
    func deviceList(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        guard let query = WireSyntax.queryMembers(request.query), query.keys.allSatisfy({ $0 == "principal" }) else {
            return .problem(.badQuery, detail: "GET /auth/devices takes only principal")
        }
        if let principal = query["principal"], !CredentialRules.isPrincipal(principal) {
            return .problem(.badQuery, detail: "principal is 1 to \(CredentialRules.maxPrincipalBytes) bytes on one line")
        }
        do {
            let devices = try locked {
                try store.devices(workspace: caller.workspace, principal: query["principal"], limit: Self.maxListed)
            }
            return Self.encoded(200, DeviceList(devices: devices.map(Self.summary)))
        } catch {
            return failure(error, "device list")
        }
    }

    /// The most devices one list shows.
    static let maxListed = 1000

    /// `POST /auth/revocations` (back office): one device, or every device of a principal,
    /// refused from its next request on, on every node.
    func revoke(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        guard let asked = Self.decode(RevocationRequest.self, request.body), (asked.deviceID == nil) != (asked.principal == nil) else {
            return .problem(.malformed, detail: "send {\"device_id\": \"…\"} or {\"principal\": \"…\"}, and a reason if you like")
        }
        if let reason = asked.reason, !CredentialRules.isLabel(reason, maxCharacters: CredentialRules.maxReasonCharacters) {
            return .problem(.malformed, detail: "reason is at most \(CredentialRules.maxReasonCharacters) characters on one line")
        }
        if let principal = asked.principal, !CredentialRules.isPrincipal(principal) {
            return .problem(.malformed, detail: "principal is 1 to \(CredentialRules.maxPrincipalBytes) bytes on one line")
        }
        do {
            let revoked = try revokeDevices(
                id: asked.deviceID, principal: asked.principal, workspace: caller.workspace,
                reason: asked.reason ?? "revoked by \(caller.principal)")
            guard let revoked else { return .problem(.noSuchDevice, detail: "this workspace holds no such device") }
            return Self.encoded(200, Revocation(revoked: revoked))
        } catch {
            return failure(error, "revocation")
        }
    }

    /// Revokes device `id`, or every device of `principal`, of `workspace`; the ids revoked
    /// now, or nil for a device the workspace does not hold. A principal's tokens issued
    /// without a device go too.
    func revokeDevices(id: String?, principal: String?, workspace: String, reason: String) throws -> [String]? {
        try locked {
            let revoked = try store.transaction { () -> [String]? in
                let now = now()
                var targets: [StoredDevice]
                if let id {
                    guard Identifier.isValid(id), let device = try store.device(id), device.grant.workspaces.contains(workspace) else {
                        return nil
                    }
                    targets = [device]
                } else if let principal {
                    targets = try store.devices(workspace: workspace, principal: principal, limit: Int.max)
                    try store.removeDevicelessTokens(principal: principal, workspace: workspace)
                } else {
                    targets = []
                }
                var ids: [String] = []
                for var device in targets where device.revokedAt == nil {
                    if id == nil { device = try store.device(device.id) ?? device }  // locked before it is changed
                    device.revokedAt = now
                    device.revokedReason = reason
                    try store.updateDevice(device)
                    ids.append(device.id)
                }
                return ids
            }
            forgetCachedTokens()
            return revoked
        }
    }

    /// Empties this node's cache of access tokens: a revocation holds at the next request.
    private func forgetCachedTokens() {
        context.accessTokens.removeAll()
    }

    // MARK: Wire

    static func summary(_ device: StoredDevice) -> DeviceSummary {
        DeviceSummary(
            deviceID: device.id, principal: device.grant.principal, role: device.grant.role.rawValue, workspaces: device.grant.workspaces,
            name: device.name, appVersion: device.appVersion, specVersion: device.specVersion,
            enrolledAt: WireSyntax.timestamp(device.enrolledAt), lastSeenAt: WireSyntax.timestamp(device.lastSeenAt),
            revokedAt: device.revokedAt.map(WireSyntax.timestamp), revokedReason: device.revokedReason)
    }

    static func revoked(_ device: StoredDevice) -> HTTPResponse {
        .problem(
            .deviceRevoked, detail: "this device's credentials were revoked (\(device.revokedReason ?? "revoked")); enrol it again",
            headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")])
    }

    static func refreshExpired() -> HTTPResponse {
        .problem(.refreshExpired, detail: "this refresh token was not used for too long; enrol the device again")
    }

    /// An enrolment code is stored by the SHA-256 of its symbols.
    static func digest(_ code: EnrolmentCode) -> Data { SHA256.hash(Data(code.symbols.utf8)) }

    /// A message of the protocol's own, or nil when the body is not one (bounded by the route's
    /// 4 KiB limit before it gets here).
    static func decode<T: Decodable>(_ type: T.Type, _ body: Data) -> T? {
        try? JSONDecoder().decode(type, from: body)
    }

    static func encoded<T: Encodable>(_ status: Int, _ value: T) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: json(value))
    }

    /// A message of the protocol's own as JSON, its keys sorted.
    static func json<T: Encodable>(_ value: T) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(value)) ?? Data("{}".utf8)
    }
}
