import FormSyncHTTP
import FormSyncProtocol
import Foundation

/// Support bundles (docs/PROTOCOL.md, "Support bundles"): the back office asks one device for
/// its bundle (`POST /support/requests`), the request reaches the device in its next page of the
/// feed, the device answers with `POST /support/bundles`, and the back office reads what came
/// (`GET /support/bundles`). A bundle is checked before it is kept; a device answers only its
/// own requests.
struct SupportService: ServerPart {
    let context: ServerContext

    /// `POST /support/requests` (back office): asks a device of the workspace for its bundle.
    func createRequest(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        guard let asked = DeviceService.decode(SupportRequestCreate.self, request.body), Identifier.isValid(asked.deviceID) else {
            return .problem(.malformed, detail: "send {\"device_id\": \"…\"}, and a reason if you like")
        }
        if let reason = asked.reason, !CredentialRules.isLabel(reason, maxCharacters: CredentialRules.maxReasonCharacters) {
            return .problem(.malformed, detail: "reason is at most \(CredentialRules.maxReasonCharacters) characters on one line")
        }
        do {
            let made = try locked {
                try store.transaction { () throws -> StoredSupportRequest? in
                    guard let device = try store.device(asked.deviceID), device.grant.workspaces.contains(caller.workspace) else {
                        return nil
                    }
                    let now = now()
                    let reason = asked.reason ?? "asked by \(caller.principal)"
                    let id = try store.support.addSupportRequest(
                        workspace: caller.workspace, deviceID: asked.deviceID, reason: reason, requestedBy: caller.principal, at: now)
                    return try store.support.supportRequest(id, workspace: caller.workspace)
                }
            }
            guard let made else { return .problem(.noSuchDevice, detail: "this workspace holds no such device") }
            return DeviceService.encoded(201, Self.summary(made))
        } catch {
            return failure(error, "support request")
        }
    }

    /// `POST /support/bundles`: keeps the calling device's bundle, and marks the request it
    /// answers (one of this device's own) answered.
    func upload(_ request: HTTPRequest) -> HTTPResponse {
        let caller: Caller
        switch self.caller(of: request) {
        case .allowed(let found): caller = found
        case .refused(let refusal): return refusal
        }
        guard request.body.count <= SupportBundle.maxBytes, let bundle = DeviceService.decode(SupportBundle.self, request.body) else {
            return .problem(.malformed, detail: "send a support bundle: JSON of at most \(SupportBundle.maxBytes) bytes")
        }
        if let problem = bundle.problem { return .problem(.malformed, detail: problem) }
        do {
            let kept = try locked {
                try store.transaction { () throws -> Int64? in
                    let now = now()
                    if let answering = bundle.answering {
                        guard let device = caller.device,
                            let open = try store.support.supportRequest(answering, workspace: caller.workspace),
                            open.deviceID == device
                        else { return nil }
                        let id = try store.support.addSupportBundle(
                            workspace: caller.workspace, deviceID: device, principal: caller.principal, body: request.body, at: now)
                        try store.support.answerSupportRequest(answering, bundle: id, at: now)
                        return id
                    }
                    return try store.support.addSupportBundle(
                        workspace: caller.workspace, deviceID: caller.device, principal: caller.principal, body: request.body, at: now)
                }
            }
            guard let kept else {
                return .problem(.noSuchSupportRequest, detail: "the bundle answers no support request made of this device")
            }
            return DeviceService.encoded(201, SupportBundleReceipt(id: kept))
        } catch {
            return failure(error, "support bundle")
        }
    }

    /// `GET /support/bundles[?device=…][&limit=…]` (back office): the newest bundles first.
    func bundles(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        guard let query = WireSyntax.queryMembers(request.query), query.keys.allSatisfy({ $0 == "device" || $0 == "limit" }) else {
            return .problem(.badQuery, detail: "GET /support/bundles takes device and limit")
        }
        if let device = query["device"], !Identifier.isValid(device) {
            return .problem(.badQuery, detail: "device is a device id: \(Identifier.rule)")
        }
        var limit = 10
        if let text = query["limit"] {
            guard let value = Int(text), (1...Self.maxListed).contains(value) else {
                return .problem(.badLimit, detail: "limit is 1 to \(Self.maxListed)")
            }
            limit = value
        }
        do {
            let stored = try locked { try store.support.supportBundles(workspace: caller.workspace, device: query["device"], limit: limit) }
            let decoder = JSONDecoder()
            let bundles = stored.compactMap { kept -> ReceivedSupportBundle? in
                guard let bundle = try? decoder.decode(SupportBundle.self, from: kept.body) else { return nil }
                return ReceivedSupportBundle(
                    id: kept.id, deviceID: kept.deviceID, principal: kept.principal, receivedAt: WireSyntax.timestamp(kept.receivedAt),
                    bundle: bundle)
            }
            return DeviceService.encoded(200, SupportBundleList(bundles: bundles))
        } catch {
            return failure(error, "support bundles")
        }
    }

    /// The most bundles one list shows (each up to `SupportBundle.maxBytes`).
    static let maxListed = 50

    static func summary(_ request: StoredSupportRequest) -> SupportRequest {
        SupportRequest(
            id: request.id, deviceID: request.deviceID, reason: request.reason, requestedAt: WireSyntax.timestamp(request.requestedAt),
            answeredAt: request.answeredAt.map(WireSyntax.timestamp))
    }

}
