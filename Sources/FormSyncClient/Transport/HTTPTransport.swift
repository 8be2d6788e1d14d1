import FormSyncModel
import FormSyncProtocol
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The outbox's transport over HTTP/JSON (docs/PROTOCOL.md) for one workspace: sends each
/// attempt with its idempotency key, document identity, workspace, form and base version, a
/// bearer token asked for at send time, and classifies every reply into an outcome. Only a 2xx
/// whose JSON echoes the document identity counts as done. Redirects are never followed (a
/// captive portal's 302 must not receive the token): any 3xx, like a portal's page, means no
/// FormSync server answered.
public final class HTTPTransport: OutboxTransport {
    /// The workspace this transport serves; sent as `FormSync-Workspace`.
    public let workspace: String
    private let baseURL: URL
    private let session: URLSession
    private let collector = ReplyCollector()
    private let maxReplyBytes: Int
    private let token: @Sendable (_ principal: String?) async -> String?
    private let timeout: TimeInterval
    private let resumableFromBytes: Int64
    private let chunkBytes: Int
    private let network: Network?

    /// One exchange over a network other than URLSession's: the request (and the file it
    /// uploads, if any) in, the status, lower-cased headers and body out; a throw is no answer.
    package typealias Network = @Sendable (URLRequest, URL?) async throws -> (status: Int, headers: [String: String], body: Data)

    /// - Parameters:
    ///   - workspace: the workspace whose items this transport carries; others are refused.
    ///   - baseURL: the workspace's server, such as `https://api.example.com/acme`.
    ///   - timeout: the longest silence of a request (between bytes); keep it below the
    ///     outbox's lease. Read as 1 s to an hour (URLSession on Linux counts it in whole seconds:
    ///     half a second would time out at once). A caller waits at most six times this for a
    ///     whole exchange (see `exchangeDeadline`).
    ///   - token: the current bearer token, asked for on every request and never stored.
    ///   - resumableFromBytes: files at least this large go up as resumable uploads
    ///     (docs/PROTOCOL.md, "Resumable uploads"), in chunks of `chunkBytes`; smaller ones in
    ///     one `POST /files`.
    ///   - maxReplyBytes: the largest reply body accepted (64 KiB to 1 GiB; 32 MiB by default,
    ///     far above a feed page). A reply that declares or sends more fails its request at once
    ///     and reads as "no FormSync server answered"; the rest is dropped as it arrives, so no
    ///     portal, proxy or hostile server can fill the device's memory.
    public convenience init(
        workspace: String, baseURL: URL, timeout: Duration = .seconds(20), maxConnections: Int = 4,
        resumableFromBytes: Int64 = 8 << 20, chunkBytes: Int = 4 << 20, maxReplyBytes: Int = 32 << 20,
        token: @escaping @Sendable () async -> String?
    ) {
        self.init(
            workspace: workspace, baseURL: baseURL, timeout: timeout, maxConnections: maxConnections,
            resumableFromBytes: resumableFromBytes,
            chunkBytes: chunkBytes, maxReplyBytes: maxReplyBytes, network: nil, tokenFor: { _ in await token() })
    }

    /// A transport for a shared phone: each request goes under the credential of the person it
    /// is for (`OutboundRequest.principal`; the current person for pulls and file fetches; nil
    /// for back-office and credential calls), so one person's items never go out under
    /// another's name. `tokenFor` answers nil when that person has no credential here.
    /// The other parameters are as in `init(workspace:baseURL:…:token:)`.
    public convenience init(
        workspace: String, baseURL: URL, timeout: Duration = .seconds(20), maxConnections: Int = 4,
        resumableFromBytes: Int64 = 8 << 20, chunkBytes: Int = 4 << 20, maxReplyBytes: Int = 32 << 20,
        tokenFor: @escaping @Sendable (_ principal: String?) async -> String?
    ) {
        self.init(
            workspace: workspace, baseURL: baseURL, timeout: timeout, maxConnections: maxConnections,
            resumableFromBytes: resumableFromBytes,
            chunkBytes: chunkBytes, maxReplyBytes: maxReplyBytes, network: nil, tokenFor: tokenFor)
    }

    /// The same transport over another network: `formsync-lab torture sim` puts its seeded model
    /// of the network and the reference server's handler here, so that every request, header
    /// and classification is the real one.
    package convenience init(
        workspace: String, baseURL: URL, timeout: Duration = .seconds(20), maxConnections: Int = 4,
        resumableFromBytes: Int64 = 8 << 20, chunkBytes: Int = 4 << 20, maxReplyBytes: Int = 32 << 20, network: Network?,
        token: @escaping @Sendable () async -> String?
    ) {
        self.init(
            workspace: workspace, baseURL: baseURL, timeout: timeout, maxConnections: maxConnections,
            resumableFromBytes: resumableFromBytes, chunkBytes: chunkBytes, maxReplyBytes: maxReplyBytes, network: network,
            tokenFor: { _ in await token() })
    }

    /// The same, with a credential per person (see `init(workspace:baseURL:…:tokenFor:)`).
    package init(
        workspace: String, baseURL: URL, timeout: Duration = .seconds(20), maxConnections: Int = 4,
        resumableFromBytes: Int64 = 8 << 20, chunkBytes: Int = 4 << 20, maxReplyBytes: Int = 32 << 20, network: Network?,
        tokenFor token: @escaping @Sendable (_ principal: String?) async -> String?
    ) {
        self.network = network
        self.maxReplyBytes = min(max(64 << 10, maxReplyBytes), 1 << 30)
        self.workspace = workspace
        self.baseURL = baseURL
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        self.timeout = min(max(seconds, 1), 3_600)
        self.token = token
        #if canImport(FoundationNetworking)
            // A file under this bound is sent whole from memory on Linux (see `deliver`).
            self.resumableFromBytes = min(max(1, resumableFromBytes), 64 << 20)
        #else
            self.resumableFromBytes = max(1, resumableFromBytes)
        #endif
        self.chunkBytes = min(max(64 << 10, chunkBytes), 64 << 20)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = maxConnections
        configuration.timeoutIntervalForRequest = self.timeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        session = URLSession(configuration: configuration, delegate: collector, delegateQueue: collector.makeDelegateQueue())
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    func url(_ path: String) -> URL {
        let base = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        return URL(string: base + path) ?? baseURL
    }

    /// Sends one attempt (a submission to its endpoint, or a file to `/files`) and classifies the reply.
    public func send(_ request: OutboundRequest) async -> DeliveryOutcome {
        await deliver(request, progress: { _, _ in }).0
    }

    /// Sends one attempt, reporting its cost and, for a file, its progress. A file at least
    /// `resumableFromBytes` large goes up as a resumable upload.
    public func deliver(
        _ request: OutboundRequest, progress: @escaping @Sendable (_ sent: Int64, _ total: Int64) -> Void
    ) async -> (DeliveryOutcome, DeliveryDetails) {
        guard request.workspace == workspace else {
            return (
                .rejected(
                    reason: "this transport serves workspace \(workspace), not \(request.workspace); nothing was sent", fieldErrors: []),
                DeliveryDetails()
            )
        }
        if case .file(_, let contentType, let byteCount, let sha256) = request.body, byteCount >= Self.lookUpFromBytes {
            switch await lookUp(sha256: sha256, byteCount: byteCount, contentType: contentType, for: request) {
            case .held(let ack, let details):
                progress(byteCount, byteCount)  // the whole file is there
                return (.done(ack), details)
            case .unreachable(let reason): return (.unreachable(reason: reason), DeliveryDetails())
            case .absent: break
            }
        }
        if case .file(let path, let contentType, let byteCount, let sha256) = request.body, byteCount >= resumableFromBytes {
            return await ResumableUpload(
                transport: self, request: request, path: path, contentType: contentType, length: byteCount, sha256: sha256,
                progress: progress
            ).run()
        }
        var http: URLRequest
        var fileToUpload: URL?
        var bodyBytes: Int64 = 0
        var headers: [String: String]
        switch request.body {
        case .submission(let form, let version, let endpoint, let payload, let baseVersion):
            http = URLRequest(url: url(endpoint))
            http.httpBody = payload
            bodyBytes = Int64(payload.count)
            headers = ["Content-Type": "application/json", ProtocolHeader.form: "\(form); version=\(version)"]
            if let baseVersion { headers[ProtocolHeader.ifMatch] = baseVersion }
            if let captured = request.capturedAt, captured.timeIntervalSince1970 >= 0, captured.timeIntervalSince1970 < 253_402_300_800 {
                headers[ProtocolHeader.capturedAt] = SupportBundleBuilder.timestamp(captured)
            }
        case .file(let path, let contentType, let byteCount, let sha256):
            http = URLRequest(url: url("/files"))
            headers = [
                "Content-Type": contentType ?? "application/octet-stream",
                ProtocolHeader.contentDigest: "sha-256=:\(sha256.base64EncodedString()):",
                "Content-Length": String(byteCount),
            ]
            bodyBytes = byteCount
            #if canImport(FoundationNetworking)
                // On Linux the file goes up from memory (it is under `resumableFromBytes`, at most
                // 64 MiB there): URLSession's upload from a file resumes its paused transfer when the
                // next bytes are read, and if the connection died meanwhile (a server node killed
                // mid-upload) libcurl refuses the resume and FoundationNetworking stops the
                // process on it (EasyHandle.swift, a `try!` on `curl_easy_pause`, error 43).
                guard let file = FileHandle(forReadingAtPath: path) else {
                    return (.rejected(reason: "the stashed copy of the file cannot be read", fieldErrors: []), DeliveryDetails())
                }
                let bytes = byteCount >= 0 ? try? file.read(upToCount: Int(byteCount) + 1) : nil
                try? file.close()
                guard let bytes, bytes.count == Int(byteCount) else {
                    return (
                        .rejected(reason: "the stashed copy of the file is not its \(byteCount) bytes", fieldErrors: []), DeliveryDetails()
                    )
                }
                http.httpBody = bytes
            #else
                fileToUpload = URL(fileURLWithPath: path)
            #endif
        }
        http.httpMethod = "POST"
        await prepare(&http, request, with: headers)
        do {
            let reply = try await perform(http, uploading: fileToUpload, bytes: bodyBytes)
            if case .file = request.body { progress(bodyBytes, bodyBytes) }
            let details = DeliveryDetails(
                status: reply.status, bytesSent: bodyBytes, bytesReceived: Int64(reply.body.count),
                serverFeatures: DeliveryDetails.features(reply.headers[ProtocolHeader.features.lowercased()]),
                lastChange: reply.status == 409 || reply.status == 412 ? Self.lastChange(reply.body) : nil)
            return (Self.classify(status: reply.status, headers: reply.headers, body: reply.body, documentID: request.documentID), details)
        } catch {
            return (.unreachable(reason: Task.isCancelled ? "cancelled" : Self.describe(error)), DeliveryDetails(bytesSent: 0))
        }
    }

    /// The headers every write carries (its identities, the workspace, and a token asked for
    /// now), with `extra`, set as one list: `URLRequest.setValue` copies the request's header
    /// table on every call (about 20 µs per request on Linux for the seven of a submission).
    func prepare(_ http: inout URLRequest, _ request: OutboundRequest, with extra: [String: String] = [:]) async {
        http.timeoutInterval = timeout
        var headers = extra
        headers[ProtocolHeader.idempotencyKey] = request.attemptID
        headers[ProtocolHeader.document] = request.documentID
        headers[ProtocolHeader.workspace] = workspace
        headers["Accept"] = "application/json, application/problem+json"
        if let token = await token(request.principal) { headers["Authorization"] = "Bearer \(token)" }
        http.allHTTPHeaderFields = headers
    }

    /// One exchange of a resumable upload, answered or not.
    func exchange(_ http: URLRequest) async -> (status: Int, headers: [String: String], body: Data)? {
        try? await perform(http)
    }

    /// Every request goes through here: URLSession, or the injected network. A cancelled
    /// caller stops waiting at once, but its request is not cancelled on the wire: it ends by
    /// its reply, its timeout or its deadline (`CancellationShield` says why). A request still
    /// going `exchangeDeadline` after it started is stopped and its caller answered. A reply
    /// past `maxReplyBytes` fails its caller at once; the rest is drained and dropped until the
    /// same deadline (`ReplyCollector`).
    package func perform(
        _ http: URLRequest, uploading file: URL? = nil, bytes: Int64? = nil
    ) async throws -> (status: Int, headers: [String: String], body: Data) {
        if let network { return try await network(http, file) }
        let collector = self.collector
        let limit = maxReplyBytes
        let deadline = Self.exchangeDeadline(timeout: http.timeoutInterval, uploading: bytes ?? Int64(http.httpBody?.count ?? 0))
        let task = file.map { session.uploadTask(with: http, fromFile: $0) } ?? session.dataTask(with: http)
        return try await CancellationShield.run { done in
            collector.start(task, limit: limit, deadline: deadline) { reply in
                done(reply.map { ($0.response.statusCode, Self.headers(of: $0.response), $0.body) })
            }
        }
    }

    var resumableChunkBytes: Int { chunkBytes }

    /// How long a caller waits for a whole exchange, in seconds: six times the request's
    /// timeout (which on Linux counts only the time between bytes), plus the upload at 8 KiB/s.
    /// With the default 20 s: 2 minutes for a submission or a page of the feed, about 10½ for a
    /// 4 MiB chunk.
    package static func exchangeDeadline(timeout: TimeInterval, uploading bytes: Int64) -> Double {
        let timeout = timeout.isFinite ? min(max(timeout, 0.1), 3_600) : 60
        return timeout * 6 + Double(min(max(bytes, 0), 1 << 40)) / 8_192
    }

    /// Whether a genuine FormSync server answers `GET /health` now. A captive portal, a proxy's
    /// error page or no network at all reads as offline: reachability is decided here, never by
    /// the OS's "connected".
    public func probe() async -> Bool {
        var http = URLRequest(url: url("/health"))
        http.timeoutInterval = max(1, min(timeout, 5))
        http.setValue(workspace, forHTTPHeaderField: ProtocolHeader.workspace)
        guard let reply = try? await perform(http), reply.status == 200,
            let object = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any]
        else { return false }
        return object["service"] as? String == "formsync" && object["status"] as? String == "ok"
    }

    /// The request an OS background-transfer service sends for `upload` (`POST /files`, with
    /// its identities, digest, workspace and a bearer token asked for now); its body is the file
    /// at `upload.file` (`URLSession.uploadTask(with:fromFile:)`). Its reply goes back to the
    /// outbox through `DeliveryOutcome(status:headers:body:documentID:)` and
    /// `Outbox.finishBackgroundUpload`. A token that expires before the OS runs it comes back as
    /// `authExpired`, and the upload goes again.
    public func backgroundRequest(for upload: BackgroundUpload) async -> URLRequest {
        var http = URLRequest(url: url("/files"))
        http.httpMethod = "POST"
        let request = OutboundRequest(
            itemID: upload.itemID, documentID: upload.documentID, attemptID: upload.attemptID, workspace: upload.workspace,
            principal: upload.principal,
            body: .file(path: upload.file.path, contentType: upload.contentType, byteCount: upload.byteCount, sha256: upload.sha256))
        await prepare(
            &http, request,
            with: [
                "Content-Type": upload.contentType, ProtocolHeader.contentDigest: FileRef.digestText(upload.sha256),
                "Content-Length": String(upload.byteCount),
            ])
        return http
    }

    /// Up to `maxBytes` of stored file `id` from `offset` (`GET /files/<id>`, `Range`). Only a
    /// reply that carries the file's `Repr-Digest` and the range asked for is a piece: a captive
    /// portal's page, a redirect or a proxy's answer is no server.
    public func fetchFile(id: Int64, from offset: Int64, maxBytes: Int) async -> FilePiece {
        await fetchFile(id: id, from: offset, maxBytes: maxBytes, as: nil)
    }

    /// `fetchFile` under `principal`'s credential.
    public func fetchFile(id: Int64, from offset: Int64, maxBytes: Int, as principal: String?) async -> FilePiece {
        guard id > 0, offset >= 0, maxBytes > 0 else { return .missing }
        var http = URLRequest(url: url("/files/\(id)"))
        http.timeoutInterval = timeout
        var headers = [
            ProtocolHeader.workspace: workspace,
            "Range": "bytes=\(offset)-\(offset.addingClamped(Int64(min(maxBytes, maxReplyBytes)) - 1))",
        ]
        if let token = await token(principal) { headers["Authorization"] = "Bearer \(token)" }
        http.allHTTPHeaderFields = headers
        guard let reply = try? await perform(http) else {
            return .failed(reason: Task.isCancelled ? "cancelled" : "no server answered", retryAfter: nil)
        }
        switch reply.status {
        case 200, 206:
            guard let digest = reply.headers[ProtocolHeader.reprDigest.lowercased()].flatMap(FileRef.sha256(of:)) else {
                return .failed(reason: "the reply is not FormSync's (no Repr-Digest)", retryAfter: nil)
            }
            if reply.status == 200 {
                guard offset == 0 else { return .failed(reason: "the server sent the whole file for a range", retryAfter: nil) }
                return .piece(bytes: reply.body, total: Int64(reply.body.count), sha256: digest, contentType: reply.headers["content-type"])
            }
            guard let range = reply.headers["content-range"], let (first, last, total) = Self.contentRange(range), first == offset,
                last - first + 1 == Int64(reply.body.count)
            else { return .failed(reason: "the reply's Content-Range is not the range asked for", retryAfter: nil) }
            return .piece(bytes: reply.body, total: total, sha256: digest, contentType: reply.headers["content-type"])
        case 404:
            return reply.headers["content-type"]?.hasPrefix("application/problem+json") == true
                ? .missing : .failed(reason: "HTTP 404 from something not FormSync", retryAfter: nil)
        default:
            return .failed(
                reason: "HTTP \(reply.status)", retryAfter: Self.retryAfter(reply.headers["retry-after"]).map { .milliseconds($0) })
        }
    }

    /// `bytes <first>-<last>/<total>`, bounded; nil for anything else.
    static func contentRange(_ header: String) -> (Int64, Int64, Int64)? {
        guard header.hasPrefix("bytes "), header.utf8.count <= 64 else { return nil }
        let parts = header.dropFirst(6).split(separator: "/")
        guard parts.count == 2, parts[1].utf8.allSatisfy({ (48...57).contains($0) }), let total = Int64(parts[1]), total > 0 else {
            return nil
        }
        let bounds = parts[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        func number(_ text: Substring) -> Int64? { text.isEmpty || !text.utf8.allSatisfy { (48...57).contains($0) } ? nil : Int64(text) }
        guard bounds.count == 2, let first = number(bounds[0]), let last = number(bounds[1]), first <= last, last < total else {
            return nil
        }
        return (first, last, total)
    }

    /// The features `GET /health` lists (`deferred-files`, `file-lookup`); nil when no genuine
    /// FormSync server answers.
    public func serverFeatures() async -> Set<String>? {
        var http = URLRequest(url: url("/health"))
        http.timeoutInterval = max(1, min(timeout, 5))
        http.setValue(workspace, forHTTPHeaderField: ProtocolHeader.workspace)
        guard let reply = try? await perform(http), reply.status == 200,
            let object = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any],
            object["service"] as? String == "formsync", object["status"] as? String == "ok"
        else { return nil }
        let listed = (object["features"] as? [Any] ?? []).prefix(32).compactMap { $0 as? String }.filter { $0.utf8.count <= 64 }
        return Set(listed)
    }

    /// Files at least this large are looked up by digest before they are sent (64 KiB): below
    /// it the bytes cost about what the question does.
    static let lookUpFromBytes: Int64 = 64 << 10

    /// What a look-up by digest found.
    enum LookUp {
        case held(ServerAcknowledgement, DeliveryDetails)
        case absent
        case unreachable(String)
    }

    /// Asks whether the server already holds these bytes in the workspace
    /// (`GET /files/sha-256/<hex>`): a file it holds with the same size and media type is this
    /// upload's acknowledgement, and no byte of it travels. Anything else (404, a server without
    /// the route, a reply that is not FormSync's) means "upload it".
    func lookUp(sha256: Data, byteCount: Int64, contentType: String?, for request: OutboundRequest) async -> LookUp {
        var http = URLRequest(url: url("/files/sha-256/" + sha256.map { String(format: "%02x", $0) }.joined()))
        await prepare(&http, request)
        guard let reply = try? await perform(http) else {
            return .unreachable(Task.isCancelled ? "cancelled" : "the file look-up got no reply")
        }
        let details = DeliveryDetails(
            status: reply.status, bytesReceived: Int64(reply.body.count),
            serverFeatures: DeliveryDetails.features(reply.headers[ProtocolHeader.features.lowercased()]))
        guard reply.status == 200, reply.headers["content-type"]?.hasPrefix("application/json") == true,
            let object = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any],
            let id = Self.serverID(object["id"]),
            (object["byte_count"] as? NSNumber)?.int64Value == byteCount,
            object["digest"] as? String == FileRef.digestText(sha256)
        else { return .absent }
        if let held = object["content_type"] as? String, let contentType,
            MediaSignature.canonical(held) != MediaSignature.canonical(contentType)
        {
            return .absent
        }
        return .held(ServerAcknowledgement(serverID: id), details)
    }

    /// Trades a refresh token for a new access token at `POST /auth/refresh`; nil when the
    /// server refuses or cannot be reached. The refresh token that replaces the one sent is not
    /// kept: an app that holds its own refresh token keeps presenting the same one, which the
    /// server takes again only until it expires (`refresh_expires_in`). Use `DeviceCredentials`,
    /// which keeps each new one, or `refresh(_:)`.
    public func refreshAccessToken(refreshToken: String) async -> String? {
        guard case .issued(let credentials) = await refresh(RefreshRequest(refreshToken: refreshToken)) else { return nil }
        return credentials.accessToken
    }

    /// `POST /auth/refresh`: new credentials for the device's current refresh token.
    public func refresh(_ request: RefreshRequest) async -> CredentialExchange {
        await exchange("/auth/refresh", request, expecting: [200])
    }

    /// `POST /auth/enrol`: a device's first credentials for an enrolment code. Send it only to
    /// the server the enrolment link names (`DeviceCredentials.enrol` checks that).
    public func enrol(_ request: EnrolRequest) async -> CredentialExchange {
        await exchange("/auth/enrol", request, expecting: [201])
    }

    private func exchange<Body: Encodable>(_ path: String, _ body: Body, expecting success: [Int]) async -> CredentialExchange {
        var http = URLRequest(url: url(path))
        http.httpMethod = "POST"
        http.timeoutInterval = timeout
        http.setValue("application/json", forHTTPHeaderField: "Content-Type")
        http.httpBody = try? JSONEncoder().encode(body)
        switch await protocolReply(http, Credentials.self, expecting: success, path: path) {
        case .done(let credentials):
            return Self.isPlausible(credentials)
                ? .issued(credentials) : .unreachable(reason: "credentials outside the protocol's bounds from \(path)")
        case .refused(let code, let detail): return .refused(code: code, detail: detail)
        case .unreachable(let reason): return .unreachable(reason: reason)
        }
    }

    // MARK: The back office's routes

    /// `POST /auth/enrolments`, with this transport's (back-office) token: a code that enrols one
    /// device for a principal in this transport's workspace.
    public func makeEnrolment(_ request: EnrolmentRequest) async -> BackOfficeReply<Enrolment> {
        await backOffice("POST", "/auth/enrolments", body: try? JSONEncoder().encode(request), expecting: [201])
    }

    /// `GET /auth/devices`: the workspace's devices, of `principal` or all.
    public func devices(principal: String? = nil) async -> BackOfficeReply<DeviceList> {
        var path = "/auth/devices"
        if let principal {
            // Everything but RFC 3986's unreserved characters is escaped: a principal may hold
            // `+`, `&` or `=`, which a query would otherwise read as something else.
            let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
            path += "?principal=" + (principal.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "")
        }
        return await backOffice("GET", path, body: nil, expecting: [200])
    }

    /// `POST /auth/revocations`: a device, or every device of a principal, cut off at once.
    public func revoke(_ request: RevocationRequest) async -> BackOfficeReply<Revocation> {
        await backOffice("POST", "/auth/revocations", body: try? JSONEncoder().encode(request), expecting: [200])
    }

    /// `POST /support/requests`, with this transport's (back-office) token: asks a device for
    /// its support bundle, which it sends after its next pull.
    public func requestSupportBundle(_ request: SupportRequestCreate) async -> BackOfficeReply<SupportRequest> {
        await backOffice("POST", "/support/requests", body: try? JSONEncoder().encode(request), expecting: [201])
    }

    /// `GET /support/bundles`, with this transport's (back-office) token: the newest bundles
    /// first, of one device when `device` is given.
    public func supportBundles(device: String? = nil, limit: Int = 10) async -> BackOfficeReply<SupportBundleList> {
        var components = URLComponents()
        components.queryItems = [URLQueryItem(name: "limit", value: String(max(1, min(limit, 50))))]
        if let device { components.queryItems?.append(URLQueryItem(name: "device", value: device)) }
        return await backOffice("GET", "/support/bundles?" + (components.percentEncodedQuery ?? ""), body: nil, expecting: [200])
    }

    /// `POST /support/bundles` under `principal`'s credential: the device's support bundle.
    public func sendSupportBundle(_ bundle: SupportBundle, as principal: String?) async -> BackOfficeReply<SupportBundleReceipt> {
        guard let body = try? JSONEncoder().encode(bundle), body.count <= SupportBundle.maxBytes else {
            return .refused(code: .tooLarge, detail: "the bundle is over \(SupportBundle.maxBytes) bytes")
        }
        return await backOffice("POST", "/support/bundles", body: body, expecting: [201], as: principal)
    }

    func backOffice<Value: Decodable & Sendable>(
        _ method: String, _ path: String, body: Data?, expecting successes: [Int], as principal: String? = nil
    ) async
        -> BackOfficeReply<Value>
    {
        var http = URLRequest(url: url(path))
        http.httpMethod = method
        http.timeoutInterval = timeout
        http.setValue(workspace, forHTTPHeaderField: ProtocolHeader.workspace)
        if let token = await token(principal) { http.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            http.httpBody = body
            http.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return await protocolReply(http, Value.self, expecting: successes, path: "\(method) \(path)")
    }

    /// One exchange of the protocol's own messages: `Value` from a `success` reply in JSON, the
    /// code of a 4xx problem (408 and 429 ask for a retry: no answer yet), anything else (a
    /// portal's page, a redirect, a 5xx, a lost connection) no answer.
    private func protocolReply<Value: Decodable & Sendable>(
        _ http: URLRequest, _ type: Value.Type, expecting successes: [Int], path: String
    ) async -> BackOfficeReply<Value> {
        let reply: (status: Int, headers: [String: String], body: Data)
        do {
            reply = try await perform(http)
        } catch {
            return .unreachable(reason: "\(error)")
        }
        let json = reply.headers["content-type"]?.lowercased().contains("json") == true
        if successes.contains(reply.status), json, let value = try? JSONDecoder().decode(Value.self, from: reply.body) {
            return .done(value)
        }
        guard json, (400..<500).contains(reply.status), reply.status != 408, reply.status != 429,
            let problem = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any], let name = problem["code"] as? String
        else {
            return .unreachable(reason: "HTTP \(reply.status) is not the protocol's answer to \(path)")
        }
        return .refused(code: ProblemCode(rawValue: name), detail: (problem["detail"] as? String).map { String($0.prefix(300)) } ?? "")
    }

    /// Whether credentials a server sent keep the protocol's bounds (a hostile server's are
    /// not stored).
    static func isPlausible(_ credentials: Credentials) -> Bool {
        let limit = CredentialRules.maxCredentialBytes
        return (1...limit).contains(credentials.accessToken.utf8.count) && (1...limit).contains(credentials.refreshToken.utf8.count)
            && Identifier.isValid(credentials.deviceID) && CredentialRules.isPrincipal(credentials.principal)
            && credentials.workspaces.count <= 64 && credentials.workspaces.allSatisfy(Identifier.isValid)
            && credentials.expiresIn > 0 && credentials.refreshExpiresIn > 0
    }

    /// The author a conflict reply names (`last_change`), if it names one that reads as one.
    static func lastChange(_ body: Data) -> ChangeAuthor? {
        guard body.count <= 1 << 20, let json = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let member = json[Acknowledgement.lastChange] as? [String: Any],
            let data = try? JSONSerialization.data(withJSONObject: member), data.count <= 4096
        else { return nil }
        return try? JSONDecoder().decode(ChangeAuthor.self, from: data)
    }

    static func headers(of response: HTTPURLResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for (key, value) in response.allHeaderFields {
            if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
        }
        return headers
    }

    /// Maps a reply to an outcome (docs/PROTOCOL.md, "Replies").
    /// `quick: false` skips `quickAcknowledgement` (for the tests that hold the two readings to
    /// the same answers).
    static func classify(status: Int, headers: [String: String], body: Data, documentID: String, quick: Bool = true) -> DeliveryOutcome {
        if quick, (200..<300).contains(status), headers["content-type"]?.lowercased().hasPrefix("application/json") == true,
            let acknowledgement = quickAcknowledgement(headers: headers, body: body, documentID: documentID)
        {
            return .done(acknowledgement)
        }
        let json = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        let problem = (json?["code"] as? String).flatMap(ProblemCode.init(rawValue:))
        switch status {
        case 200..<300:
            guard Acknowledgement.acknowledges(status: status, contentType: headers["content-type"], object: json, document: documentID),
                let json
            else {
                return .unreachable(reason: "HTTP \(status) without an acknowledgement of this document (a captive portal or proxy?)")
            }
            let id = serverID(json[Acknowledgement.id])
            let version = Self.version(headers["etag"] ?? (json[Acknowledgement.version] as? String))
            return .done(
                ServerAcknowledgement(
                    serverID: id, version: version, record: (json[Acknowledgement.entity] as? [String: Any]).flatMap(change),
                    createdRecords: Self.createdRecords(json[Acknowledgement.createdRecords])))
        case 300..<400:
            return .unreachable(reason: "HTTP \(status) redirect refused (a captive portal?); nothing was followed")
        case 401:
            return .authExpired
        case 412:
            guard let (current, version) = currentRecord(json, headers) else {
                return .transient(reason: "HTTP 412 without the current record", retryAfter: nil)
            }
            return .conflict(current: current, version: version)
        case 409 where [.documentExists, .authorityConflict].contains(problem):
            // The document exists with other content: a conflict to merge or show, never "done".
            guard let (current, version) = currentRecord(json, headers) else {
                return .rejected(reason: "HTTP 409\(problemText(json))", fieldErrors: [])
            }
            return .conflict(current: current, version: version)
        case 409 where [.documentFormMismatch, .documentWorkspaceMismatch, .documentPrincipalMismatch].contains(problem):
            return .rejected(reason: "HTTP 409\(problemText(json))", fieldErrors: [])
        case 408, 409, 425, 429, 500..<600:
            return .transient(
                reason: "HTTP \(status)\(problemText(json))", retryAfter: retryAfter(headers["retry-after"]).map { .milliseconds($0) })
        case 422:
            let errors = (json?["errors"] as? [[String: Any]] ?? []).compactMap { e -> FieldError? in
                guard let pointer = e["pointer"] as? String else { return nil }
                return FieldError(pointer: pointer, code: e["code"] as? String ?? "invalid", detail: e["detail"] as? String ?? "")
            }
            return .rejected(reason: "HTTP 422\(problemText(json))", fieldErrors: errors)
        case 400..<500:
            return .rejected(reason: "HTTP \(status)\(problemText(json))", fieldErrors: [])
        default:
            return .unreachable(reason: "HTTP \(status) is not a FormSync reply")
        }
    }

    /// The common acknowledgement read from its top-level members only, without parsing the
    /// record it echoes (a 2 KB order made `JSONSerialization` about a fifth of the client's
    /// CPU per send). Nil whenever anything is out of the ordinary (an escaped or other
    /// document id, an id that is not plain digits, no `ETag` but a `version`, an `entity`):
    /// the full reading then decides, so this path only ever agrees with it.
    static func quickAcknowledgement(headers: [String: String], body: Data, documentID: String) -> ServerAcknowledgement? {
        guard let members = JSONObjectSlices(body), members[Acknowledgement.entity] == nil, members[Acknowledgement.createdRecords] == nil,
            let echoed = members[Acknowledgement.documentID],
            echoed.count == documentID.utf8.count + 2, echoed.first == 0x22, echoed.last == 0x22,
            echoed.dropFirst().dropLast().elementsEqual(documentID.utf8), !documentID.utf8.contains(where: { $0 == 0x5C || $0 < 0x20 })
        else { return nil }
        var id: Int64?
        if let bytes = members[Acknowledgement.id] {
            guard let number = wholeNumber(bytes), serverIDs.contains(number) else { return nil }
            id = number
        }
        guard headers["etag"] != nil || members[Acknowledgement.version] == nil else { return nil }
        return ServerAcknowledgement(serverID: id, version: version(headers["etag"]), record: nil)
    }

    /// Fetches one page of the change feed (`GET /changes`), classified like a send: no answer,
    /// a portal's page or a redirect is `unreachable`; 401 `authExpired`; 410 `cursorExpired`.
    public func fetchChanges(cursor: String?, limit: Int) async -> PullOutcome {
        await fetchChanges(cursor: cursor, limit: limit, as: nil)
    }

    /// `fetchChanges` under `principal`'s credential.
    public func fetchChanges(cursor: String?, limit: Int, as principal: String?) async -> PullOutcome {
        await fetchChanges(cursor: cursor, limit: limit, as: principal, waiting: 0)
    }

    /// `fetchChanges` held by the server up to `wait` (whole seconds, at most a few less than
    /// this transport's timeout, so that a held reply is never taken for a silent server).
    public func fetchChanges(cursor: String?, limit: Int, as principal: String?, waitingUpTo wait: Duration) async -> PullOutcome {
        let seconds = max(0, min(Int(wait.components.seconds), Int(timeout) - Self.waitMargin))
        return await fetchChanges(cursor: cursor, limit: limit, as: principal, waiting: seconds)
    }

    /// Seconds between the longest wait asked of the server and the transport's timeout.
    static let waitMargin = 5

    /// `fetchChanges` of one subscription's feed.
    public func fetchChanges(cursor: String?, limit: Int, as principal: String?, subscription: SubscriptionQuery) async -> PullOutcome {
        await fetchChanges(cursor: cursor, limit: limit, as: principal, waiting: 0, subscription: subscription)
    }

    private func fetchChanges(
        cursor: String?, limit: Int, as principal: String?, waiting seconds: Int, subscription: SubscriptionQuery? = nil
    ) async -> PullOutcome {
        // Every value is percent-encoded but for unreserved characters: a subscription's JSON
        // holds `&`, `=` and `+`, which a query would otherwise read as its own.
        // A server that answers JSON serves a limit above 1,000 as 1,000.
        var pairs = [("limit", String(max(1, min(limit, CompactFeedPage.maxChanges))))]
        if let cursor { pairs.append(("cursor", cursor)) }
        if seconds > 0 { pairs.append(("wait", String(seconds))) }
        if let subscription { pairs.append((SubscriptionQuery.parameter, subscription.json)) }
        let query = pairs.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? "")" }
        var http = URLRequest(url: url("/changes?" + query.joined(separator: "&")))
        http.timeoutInterval = timeout
        http.setValue(workspace, forHTTPHeaderField: ProtocolHeader.workspace)
        http.setValue("\(CompactFeedPage.mediaType), application/json, application/problem+json", forHTTPHeaderField: "Accept")
        if let token = await token(principal) { http.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        do {
            let reply = try await perform(http)
            return Self.classifyPage(status: reply.status, headers: reply.headers, body: reply.body)
        } catch {
            return .unreachable(reason: Task.isCancelled ? "cancelled" : Self.describe(error))
        }
    }

    /// RFC 3986's unreserved characters: the only ones a query value carries as they are.
    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// The most changes a page may carry before it is taken for a broken server.
    static let maxChangesPerPage = 10_000

    /// Maps a reply of `GET /changes` to an outcome. Every change is checked: a type of 1 to 128
    /// characters, a server id from 1 to 2^53 − 1, a version from 1, fields that are an object.
    static func classifyPage(status: Int, headers: [String: String], body: Data) -> PullOutcome {
        switch status {
        case 200:
            let contentType = headers["content-type"]?.lowercased() ?? ""
            let compact = contentType.hasPrefix(CompactFeedPage.mediaType)
            let read =
                compact
                ? ChangeFeedReader.readCompact(body, limit: maxChangesPerPage)
                : contentType.hasPrefix("application/json") ? ChangeFeedReader.read(body, limit: maxChangesPerPage) : nil
            guard let feed = read else {
                if compact { return .failed(reason: "the change feed's compact page is malformed", retryAfter: nil) }
                return .unreachable(reason: "HTTP 200 that is not a change feed (a captive portal or proxy?)")
            }
            let cursor = feed.cursor
            guard !cursor.isEmpty, cursor.utf8.count <= 256, cursor.utf8.allSatisfy({ (0x21...0x7E).contains($0) }),
                feed.count <= maxChangesPerPage
            else {
                return .failed(reason: "the change feed's page is malformed (cursor or size)", retryAfter: nil)
            }
            guard !feed.malformed else { return .failed(reason: "the change feed holds a malformed change", retryAfter: nil) }
            return .page(
                ChangePage(
                    changes: feed.changes, cursor: cursor, more: feed.more, supportRequest: feed.supportRequest, reviews: feed.reviews,
                    remaining: feed.remaining))
        case 300..<400:
            return .unreachable(reason: "HTTP \(status) redirect refused (a captive portal?); nothing was followed")
        case 401:
            return .authExpired
        case 410:
            return .cursorExpired
        case 100..<600:
            let json = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
            return .failed(
                reason: "HTTP \(status)\(problemText(json))", retryAfter: retryAfter(headers["retry-after"]).map { .milliseconds($0) })
        default:
            return .unreachable(reason: "HTTP \(status) is not a FormSync reply")
        }
    }

    /// A JSON integer written as plain digits (no sign, fraction or exponent), at most 16 digits.
    static func wholeNumber(_ bytes: Data?) -> Int64? {
        bytes.flatMap { ChangeFeedReader.wholeNumber($0) }
    }

    /// A change (or a reply's `entity`) as the protocol promises it; nil for anything else.
    static func change(_ object: [String: Any]) -> RecordChange? {
        guard let type = object["type"] as? String, (1...128).contains(type.utf8.count), let id = serverID(object["id"]) else { return nil }
        if object["deleted"] as? Bool == true { return RecordChange(type: type, id: id, version: 0, fields: nil) }
        guard let number = object["version"] as? NSNumber, let version = Int(exactly: number.doubleValue), version >= 1,
            version < Int(Int32.max),
            let record = object["record"] as? [String: Any],
            let fields = try? JSONSerialization.data(withJSONObject: record, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return nil }
        return RecordChange(type: type, id: id, version: version, fields: fields)
    }

    /// A reply's `created_records`, as far as each entry is what the protocol promises (a
    /// list name, an index from 0, a record or its deletion): at most 10,000, others left out.
    static func createdRecords(_ value: Any?) -> [CreatedListRecord] {
        guard let entries = value as? [Any] else { return [] }
        return entries.prefix(10_000).compactMap { entry in
            guard let object = entry as? [String: Any], let list = object[Acknowledgement.list] as? String,
                (1...128).contains(list.utf8.count), let number = object[Acknowledgement.position] as? NSNumber,
                let index = Int(exactly: number.doubleValue), (0..<1_000_000).contains(index), let record = change(object)
            else { return nil }
            return CreatedListRecord(list: list, index: index, record: record)
        }
    }

    /// The current record and its version from a 412 or a 409 `document-exists` reply.
    static func currentRecord(_ json: [String: Any]?, _ headers: [String: String]) -> (Data, String)? {
        guard let json, let record = json[Acknowledgement.record], JSONSerialization.isValidJSONObject(record),
            let current = try? JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]),
            let version = version(headers["etag"] ?? (json[Acknowledgement.version] as? String))
        else { return nil }
        return (current, version)
    }

    /// A server id as the protocol promises it: a whole number from 1 to 2^53 − 1 (exact in
    /// every JSON reader). Anything else (0, negative, fractional, huge) is no id at all.
    /// The server ids the protocol allows: 1 to 2^53 − 1 (exact in every JSON reader).
    static let serverIDs: ClosedRange<Int64> = 1...9_007_199_254_740_991

    static func serverID(_ value: Any?) -> Int64? {
        guard let number = value as? NSNumber else { return nil }
        let double = number.doubleValue
        guard double.isFinite, double >= 1, double <= Double(serverIDs.upperBound), double == double.rounded(.towardZero) else {
            return nil
        }
        return Int64(double)
    }

    /// A record version (ETag) fit to be sent back in `If-Match`: short, printable ASCII only, so
    /// a reply cannot smuggle a header through it.
    static func version(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= 256, value.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        return value
    }

    static func problemText(_ json: [String: Any]?) -> String {
        guard let json else { return "" }
        if let detail = json["detail"] as? String { return ": " + detail }
        if let title = json["title"] as? String { return ": " + title }
        return ""
    }

    /// The longest `Retry-After` read from a reply: a day. The outbox clamps further, to its
    /// retry policy's cap; this bound only keeps every later sum far from overflow.
    static let retryAfterCeilingMilliseconds: Int64 = 86_400_000

    /// `Retry-After` as delay-seconds or an HTTP-date (docs/PROTOCOL.md, "Standards"), in milliseconds from
    /// now, never more than `retryAfterCeilingMilliseconds`. Whatever the header holds (a huge
    /// number, a far or past date, garbage), the answer is bounded or nil.
    static func retryAfter(_ value: String?, now: Date = Date()) -> Int64? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty, value.utf8.count <= 64 else { return nil }
        if value.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            guard let seconds = Int64(value) else { return retryAfterCeilingMilliseconds }
            let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
            return overflow ? retryAfterCeilingMilliseconds : min(milliseconds, retryAfterCeilingMilliseconds)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: value) else { return nil }
        let milliseconds = (date.timeIntervalSince(now) * 1000).rounded(.up)
        guard milliseconds.isFinite else { return nil }
        return Int64(min(max(milliseconds, 0), Double(retryAfterCeilingMilliseconds)))
    }

    /// A network failure in words, classified by its structure (URLError code), never by text.
    static func describe(_ error: any Error) -> String {
        if let error = error as? ReplyCollector.DeadlinePassed { return "\(error)" }
        if let error = error as? ReplyCollector.ReplyTooLarge { return "\(error)" }
        guard let error = error as? URLError else { return "network error: \(error)" }
        switch error.code {
        case .notConnectedToInternet: return "not connected"
        case .timedOut: return "timed out"
        case .networkConnectionLost: return "connection lost"
        case .cannotConnectToHost: return "cannot connect to the server"
        case .cannotFindHost, .dnsLookupFailed: return "server name not found"
        default: return "network error \(error.code.rawValue)"
        }
    }
}
