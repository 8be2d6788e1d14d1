import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The idempotency ledger around every write (docs/PROTOCOL.md, §1): a replay returns the
/// recorded reply, the same key with another request is 422, a key still in flight is 409, and
/// the write commits together with the reply it recorded. Keys are scoped to the caller's
/// workspace and principal: another device's key is another key.
struct IdempotencyLedger: ServerPart {
    let context: ServerContext

    /// Runs one write under the ledger. `prepare` runs outside the lock and the transaction:
    /// the work that depends on the request alone (decoding, validating, hashing), so that
    /// concurrent writers hold the lock only for what touches the store. (A replay's is wasted,
    /// and it is rare.) `perform` runs inside the transaction.
    func write<P>(
        _ request: HTTPRequest, fault: FaultPlan.Fault?, prepare: () -> P, perform process: @escaping (P, Caller) throws -> HTTPResponse
    ) -> HTTPResponse? {
        let (found, token) = access.writer(of: request)
        let caller: Caller
        switch found {
        case .allowed(let allowed): caller = allowed
        case .refused(let refusal): return refusal
        }
        if let refusal = Self.headerProblem(request) { return refusal }
        let document = request.header(ProtocolHeader.document)!
        let key = "\(caller.workspace)\u{1F}\(caller.principal)\u{1F}\(request.header(ProtocolHeader.idempotencyKey)!)"
        var fingerprint = SHA256()
        fingerprint.update(
            Data(
                "\(request.method) \(request.path)\n\(request.header(ProtocolHeader.form) ?? "")\n\(request.header(ProtocolHeader.ifMatch) ?? "")\n\(document)\n"
                    .utf8))
        fingerprint.update(request.body)
        let hash = fingerprint.finalize()
        let faults = self.faults
        let hold: (() -> Void)? =
            switch fault {
            case .delay(let milliseconds): { faults.holding { Thread.sleep(forTimeInterval: Double(milliseconds) / 1000) } }
            case .hold: { faults.holding { faults.waitForRelease() } }
            default: nil
            }
        let prepared = prepare()
        let outcome: LedgerOutcome
        do {
            outcome = try store.idempotentWrite(key: key, hash: hash, hold: hold, now: now(), document: document, token: token) {
                let response = try process(prepared, caller)
                return RecordedReply(status: response.status, headers: response.headers, body: response.body)
            }
        } catch {
            return failure(error)
        }
        switch outcome {
        case .processed(let reply):
            if let hook = settings.afterCommit { hook(locked { store.documentCount() }) }
            return HTTPResponse(status: reply.status, headers: reply.headers, body: reply.body)
        case .recorded(let recordedHash, _) where recordedHash != hash:
            return .problem(.keyReused, detail: "this Idempotency-Key was used with a different request")
        case .recorded(_, let replay):
            return HTTPResponse(
                status: replay.status, headers: replay.headers + [(ProtocolHeader.idempotentReplayed, "true")], body: replay.body)
        case .tokenWithdrawn:
            // Revoked or expired since it was found: the refusal a fresh look-up gives.
            if case .refused(let refusal) = self.caller(of: request) { return refusal }
            return Self.storeUnavailable()
        case .inFlight:
            return .problem(
                .keyInFlight, detail: "a request with this Idempotency-Key is still being processed", headers: [("Retry-After", "1")])
        }
    }

    /// The refusal of a write whose `Idempotency-Key`, `FormSync-Document`,
    /// `FormSync-Workspace` or `If-Match` is missing or malformed; nil when they are sound.
    static func headerProblem(_ request: HTTPRequest) -> HTTPResponse? {
        guard WireSyntax.isIdentifier(request.header(ProtocolHeader.idempotencyKey)) else {
            return .problem(.badIdempotencyKey, detail: "Idempotency-Key is required: \(WireSyntax.identifierRule)")
        }
        guard WireSyntax.isIdentifier(request.header(ProtocolHeader.document)) else {
            return .problem(.badDocumentID, detail: "FormSync-Document is required: \(WireSyntax.identifierRule)")
        }
        if let workspace = request.header(ProtocolHeader.workspace), !WireSyntax.isIdentifier(workspace) {
            return .problem(.badWorkspace, detail: "FormSync-Workspace: \(WireSyntax.identifierRule)")
        }
        if let ifMatch = request.header(ProtocolHeader.ifMatch), WireSyntax.entityTags(ifMatch) == nil {
            return .problem(.badIfMatch, detail: "If-Match must be * or a list of entity tags (RFC 9110 §13.1.1)")
        }
        return nil
    }
}
