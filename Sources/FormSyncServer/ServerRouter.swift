import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// Where a request goes: from its head alone, how much of its body is read (or the refusal that
/// reads none of it); with its body, the faults planned for it and the part of the server that
/// answers its route (`FormSyncProtocol.Route`).
struct ServerRouter: ServerPart {
    let context: ServerContext

    /// Decides from the head alone: the route's body limit, and for a route whose body is read
    /// under an access token, the token and (for document writes) the protocol headers, so that
    /// nothing is read from a request that will be refused. (While a fault is planned, the faults
    /// come first, as a network in front of the server would.)
    func preflight(_ head: HTTPRequest) -> HTTPServer.Preflight {
        // The console signs in with a cookie, not a bearer token, and reads small forms.
        if ConsoleService.handles(head.path) { return .read(maxBodyBytes: ConsoleService.maxBodyBytes) }
        let route = Route.match(method: head.method, path: head.path)
        let limit: Int
        switch route?.body ?? Route.Body.none {
        case .message: limit = 4096
        case .payload: limit = SyncServer.maxSubmissionBytes
        case .file: limit = SyncServer.maxFileBytes
        case .none: limit = 0
        }
        guard let route, route.body != .none, route.needsAccessToken, faults.isEmpty, !faults.isOutage else {
            return .read(maxBodyBytes: limit)
        }
        let (found, check) = access.preflightCaller(of: head)
        switch found {
        case .refused(let refusal):
            return .refuse(refusal)
        case .allowed(let caller) where route.isBackOfficeOnly && caller.role != .backOffice:
            return .refuse(Self.backOfficeOnly(route))
        case .allowed:
            break
        }
        if route.isDocumentWrite, let refusal = IdempotencyLedger.headerProblem(head) { return .refuse(refusal) }
        // A document write checks its token again in its transaction: it takes on this look-up.
        return .read(maxBodyBytes: limit, note: route.isDocumentWrite ? check : nil)
    }

    /// The answer to `request` (nil: the connection is closed without one): a planned fault's, a
    /// refusal of a request meant for another workspace or a route that does not exist, or the
    /// answer of the part that serves `matched`.
    func respond(_ request: HTTPRequest, _ matched: Route?, route: FaultPlan.Route, fault: FaultPlan.Fault?) -> HTTPResponse? {
        switch fault {
        case .captivePortal:
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "text/html")],
                body: Data("<html><body><h1>Welcome to FuelStop Wi-Fi</h1><form>Log in to continue</form></body></html>".utf8))
        case .unavailable(let seconds):
            return .problem(.busy, detail: "try again later", headers: [("Retry-After", String(seconds))])
        case .tooManyRequests(let seconds):
            return .problem(.rateLimited, detail: "slow down", headers: [("Retry-After", String(seconds))])
        case .unauthorized:
            return .problem(.badToken, detail: "the token expired", headers: [("WWW-Authenticate", "Bearer")])
        case .delay(let milliseconds) where route == .append:
            // An append has no ledger entry to hold it in: it is held before it is read.
            faults.holding { Thread.sleep(forTimeInterval: Double(milliseconds) / 1000) }
        case .hold where route == .append:
            faults.holding { faults.waitForRelease() }
        default:
            break
        }
        if ConsoleService.handles(request.path) { return ConsoleService(context: context).respond(request) }
        if let refusal = access.misdirected(request) { return refusal }
        guard let matched else {
            if Route.isFixedPath(request.path) {
                return .problem(.methodNotAllowed, detail: "\(request.method) is not a method of \(request.path)")
            }
            return .problem(.noRoute, detail: "no route for \(request.method) \(request.path)")
        }
        let ledger = IdempotencyLedger(context: context)
        let devices = DeviceService(context: context)
        let uploads = UploadService(context: context)
        let submissions = SubmissionService(context: context)
        switch matched {
        case .health:
            return .json(200, ["service": "formsync", "status": "ok", "protocol": 1, "features": settings.features])
        case .fileLookup where settings.offersFileLookup:
            return files.fileLookup(request)
        case .fileLookup, .fileFetch:
            return files.fileDownload(request)
        case .pendingFiles:
            return files.pendingFilesRoute(request)
        case .refresh:
            return devices.refresh(request)
        case .enrol:
            return devices.enrol(request)
        case .supportBundleUpload:
            return SupportService(context: context).upload(request)
        case .enrolmentCreate, .devices, .revocation, .supportRequestCreate, .supportBundles, .submissions, .documentHistory,
            .recordHistory,
            .review, .webhookCreate, .webhooks, .webhookSecret, .webhookDelete, .webhookDeliveries, .webhookResend:
            let caller: Caller
            switch self.caller(of: request) {
            case .refused(let refusal): return refusal
            case .allowed(let allowed): caller = allowed
            }
            guard caller.role == .backOffice else { return Self.backOfficeOnly(matched) }
            switch matched {
            case .enrolmentCreate: return devices.createEnrolment(request, caller: caller)
            case .devices: return devices.deviceList(request, caller: caller)
            case .supportRequestCreate: return SupportService(context: context).createRequest(request, caller: caller)
            case .supportBundles: return SupportService(context: context).bundles(request, caller: caller)
            case .submissions: return SubmissionFeed(context: context).submissions(request, caller: caller)
            case .documentHistory: return HistoryService(context: context).documentHistory(request, caller: caller)
            case .recordHistory: return HistoryService(context: context).recordHistory(request, caller: caller)
            case .review: return HistoryService(context: context).review(request, caller: caller)
            case .webhookCreate: return WebhookService(context: context).create(request, caller: caller)
            case .webhooks: return WebhookService(context: context).list(caller: caller)
            case .webhookSecret: return WebhookService(context: context).rotate(request, caller: caller)
            case .webhookDelete: return WebhookService(context: context).delete(request, caller: caller)
            case .webhookDeliveries: return WebhookService(context: context).deliveries(request, caller: caller)
            case .webhookResend: return WebhookService(context: context).resend(request, caller: caller)
            default: return devices.revoke(request, caller: caller)
            }
        case .changes:
            return ChangeFeed(context: context).changes(request)
        case .record:
            return records.recordRoute(request)
        case .document:
            return submissions.documentRoute(request)
        case .fileUpload:
            return ledger.write(
                request, fault: fault, prepare: { SHA256.hash(request.body) },
                perform: { [files] in try files.storeFile(request, digest: $0, caller: $1) })
        case .uploadCreate:
            return uploads.createUpload(request)
        case .uploadOffset:
            return uploads.uploadOffset(request)
        case .uploadAppend:
            return uploads.appendUpload(request)
        case .submission:
            return ledger.write(
                request, fault: fault, prepare: { submissions.checkSubmission(request) },
                perform: { try submissions.submit(request, $0, caller: $1) })
        }
    }

    static func backOfficeOnly(_ route: Route) -> HTTPResponse {
        .problem(.backOfficeOnly, detail: "\(route.method) \(route.template) is for the back office")
    }
}
