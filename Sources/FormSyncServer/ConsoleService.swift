import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The back-office console (`/console`, docs/Console.md): plain server-rendered pages over the
/// back office's half of the protocol, for a team without a back office of its own: the
/// submissions by form, a document's versions side by side with their authors, changes and
/// photos, its pending files, review actions, webhooks with their dead letters, and devices.
/// Signing in takes a back-office access token, kept in an HTTP-only, same-site cookie for
/// `/console` alone; every form that changes something also carries a token derived from it.
struct ConsoleService: ServerPart {
    let context: ServerContext

    static let cookie = "formsync_console"
    /// The largest form post the console reads.
    static let maxBodyBytes = 16 * 1024

    /// Whether `path` is the console's.
    static func handles(_ path: String) -> Bool { path == "/console" || path.hasPrefix("/console/") }

    func respond(_ request: HTTPRequest) -> HTTPResponse {
        let path = request.path
        switch (request.method, path) {
        case ("GET", "/console/login"): return loginPage(problem: nil)
        case ("POST", "/console/login"): return login(request)
        case ("GET", "/console/logout"):
            return Self.redirect("/console/login", cookie: "\(Self.cookie)=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0")
        default: break
        }
        guard let (caller, token) = signedIn(request) else { return Self.redirect("/console/login") }
        switch (request.method, path) {
        case ("GET", "/console"), ("GET", "/console/"): return Self.redirect("/console/submissions")
        case ("GET", "/console/submissions"): return submissions(request, caller)
        case ("GET", "/console/webhooks"): return webhooks(caller, token: token)
        case ("GET", "/console/devices"): return devices(caller)
        case ("GET", let path) where path.hasPrefix("/console/documents/"):
            return document(String(path.dropFirst("/console/documents/".count)), caller, token: token)
        case ("GET", let path) where path.hasPrefix("/console/files/"):
            return file(String(path.dropFirst("/console/files/".count)), caller)
        case ("POST", let path) where path.hasPrefix("/console/"):
            let form = Self.formFields(request.body)
            guard form["csrf"] == Self.csrf(token) else {
                return page(
                    "Refused", caller, "<p>This form is out of date or came from elsewhere. Go back and send it again.</p>", status: 403)
            }
            if path.hasPrefix("/console/documents/"), path.hasSuffix("/review") {
                return review(String(path.dropFirst("/console/documents/".count).dropLast("/review".count)), form, caller, token: token)
            }
            if path.hasPrefix("/console/webhooks/"), path.hasSuffix("/resend") { return resend(path, caller, token: token) }
            return page("Not found", caller, "<p>No such page.</p>", status: 404)
        default:
            return page("Not found", caller, "<p>No such page.</p>", status: 404)
        }
    }

    // MARK: Signing in

    private func loginPage(problem: String?) -> HTTPResponse {
        let body = """
            \(problem.map { "<p class=\"dead\">\(ConsolePage.escape($0))</p>" } ?? "")
            <form method="post" action="/console/login" class="review">
            <label for="workspace">Workspace</label><input type="text" id="workspace" name="workspace" required>
            <label for="token">Back-office access token</label><input type="text" id="token" name="token" required autocomplete="off">
            <p><button type="submit" id="sign-in">Sign in</button></p></form>
            <p class="muted">The token is kept in a cookie of this console only, for this browser session.</p>
            """
        return HTTPResponse(
            status: problem == nil ? 200 : 401, headers: Self.htmlHeaders, body: ConsolePage.page("Sign in", workspace: nil, body))
    }

    private func login(_ request: HTTPRequest) -> HTTPResponse {
        let form = Self.formFields(request.body)
        guard let token = form["token"], let workspace = form["workspace"], !token.isEmpty, token.utf8.count <= 512,
            WireSyntax.isIdentifier(workspace)
        else { return loginPage(problem: "Give a workspace and a back-office token.") }
        guard case .allowed(let caller) = self.caller(of: Self.bearer(token, workspace)), caller.role == .backOffice else {
            return loginPage(problem: "That token does not sign in to the back office of \(workspace).")
        }
        let value = Data("\(workspace)\n\(token)".utf8).base64EncodedString()
        return Self.redirect("/console/submissions", cookie: "\(Self.cookie)=\(value); Path=/console; HttpOnly; SameSite=Strict")
    }

    /// The back-office caller the console cookie names, and its token.
    private func signedIn(_ request: HTTPRequest) -> (Caller, String)? {
        guard let header = request.header("cookie"), header.utf8.count <= 4096 else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0] == Self.cookie, let data = Data(base64Encoded: String(pair[1])) else { continue }
            let fields = String(decoding: data, as: UTF8.self).split(separator: "\n", maxSplits: 1).map(String.init)
            guard fields.count == 2, case .allowed(let caller) = self.caller(of: Self.bearer(fields[1], fields[0])),
                caller.role == .backOffice
            else { return nil }
            return (caller, fields[1])
        }
        return nil
    }

    static func bearer(_ token: String, _ workspace: String) -> HTTPRequest {
        HTTPRequest(
            method: "GET", path: "/console", query: nil,
            headers: ["authorization": "Bearer \(token)", ProtocolHeader.workspace.lowercased(): workspace], body: Data())
    }

    /// What a form that changes something carries: derived from the token, so a page of another
    /// site cannot make one.
    static func csrf(_ token: String) -> String {
        WebhookSignature.hex(WebhookSignature.hmac(key: Data(token.utf8), message: Data("formsync console".utf8))).prefix(32).description
    }

    // MARK: Pages

    private func submissions(_ request: HTTPRequest, _ caller: Caller) -> HTTPResponse {
        let query = WireSyntax.queryMembers(request.query) ?? [:]
        let form = query["form"].flatMap { registry[$0] == nil ? nil : $0 }
        do {
            let events = try locked { try store.history.recentEvents(workspace: caller.workspace, form: form, limit: 2000) }
            var seen: Set<String> = []
            var rows = ""
            var verdicts: [String: Review.Verdict] = [:]
            for event in events.reversed() { if let review = event.review { verdicts[event.documentID] = review.verdict } }
            for event in events where event.payload != nil && seen.insert(event.documentID).inserted {
                let verdict = verdicts[event.documentID]
                rows += """
                    <tr><td><a href="/console/documents/\(ConsolePage.escape(event.documentID))">\(ConsolePage.escape(event.documentID))</a></td>
                    <td>\(ConsolePage.escape(event.form))</td><td>\(event.version)</td>
                    <td>\(ConsolePage.escape(event.author.principal ?? "the server"))</td><td>\(WireSyntax.timestamp(event.author.at))</td>
                    <td class="verdict-\(verdict?.rawValue ?? "")">\(verdict?.rawValue ?? "—")</td></tr>
                    """
            }
            let filters = (["all"] + registry.names).map { name in
                name == "all"
                    ? "<a href=\"/console/submissions\">all</a>"
                    : "<a href=\"/console/submissions?form=\(ConsolePage.escape(name))\">\(ConsolePage.escape(name))</a>"
            }.joined(separator: " · ")
            return page(
                "Submissions" + (form.map { ": \($0)" } ?? ""), caller,
                """
                <p>Forms: \(filters)</p>
                <table id="submissions"><tr><th>Document</th><th>Form</th><th>Version</th><th>Last changed by</th><th>At</th><th>Review</th></tr>
                \(rows.isEmpty ? "<tr><td colspan=6>Nothing yet.</td></tr>" : rows)</table>
                """)
        } catch {
            return failure(error, "console")
        }
    }

    private func document(_ id: String, _ caller: Caller, token: String) -> HTTPResponse {
        guard WireSyntax.isIdentifier(id) else { return page("Not found", caller, "<p>No such document.</p>", status: 404) }
        do {
            let found = try locked { () throws -> (events: [StoredDocumentEvent], files: [SubmissionEvent.File])? in
                guard let owner = store.owner(of: id), owner.form != nil, owner.workspace == caller.workspace else { return nil }
                let events = try store.history.documentEvents(document: id, limit: 200)
                guard let latest = events.last(where: { $0.payload != nil }) else { return nil }
                return (events, try SubmissionFeed(context: context).files(of: latest))
            }
            guard let (events, files) = found else { return page("Not found", caller, "<p>No such document here.</p>", status: 404) }
            var previous: Data?
            var columns = ""
            for event in events where event.payload != nil {
                let changed = Set(event.event == .accepted ? [] : FieldDiff.changes(old: previous, new: event.payload).map(\.pointer))
                previous = event.payload
                var cells = ""
                for (pointer, text) in Self.fields(event.payload) {
                    let mark = changed.contains(pointer) ? " class=\"changed\"" : ""
                    cells += "<tr\(mark)><th>\(ConsolePage.escape(pointer))</th><td>\(ConsolePage.escape(text))</td></tr>"
                }
                columns += """
                    <div class="version"><h3>Version \(event.version) · \(event.event.rawValue)</h3>
                    <p class="muted">\(ConsolePage.escape(event.author.principal ?? "the server")) · \(WireSyntax.timestamp(event.author.at))\(event.author.device.map { " · device \(ConsolePage.escape($0))" } ?? "")</p>
                    <table>\(cells)</table></div>
                    """
            }
            var media = ""
            for file in files {
                if let fileID = file.fileID {
                    let image = (file.contentType ?? "").hasPrefix("image/")
                    media +=
                        image
                        ? "<p>\(ConsolePage.escape(file.pointer))<img class=\"photo\" alt=\"\(ConsolePage.escape(file.pointer))\" src=\"/console/files/\(fileID)\"></p>"
                        : "<p><a href=\"/console/files/\(fileID)\">\(ConsolePage.escape(file.pointer))</a></p>"
                } else {
                    media +=
                        "<p class=\"pending\">\(ConsolePage.escape(file.pointer)): pending (\(ConsolePage.escape(file.digest ?? "")))</p>"
                }
            }
            let reviews = events.compactMap(HistoryService.review).map { review in
                "<li class=\"verdict-\(review.verdict.rawValue)\">\(review.verdict.rawValue) of version \(review.version) by \(ConsolePage.escape(review.reviewer)) at \(review.at)\(review.comment.isEmpty ? "" : ": " + ConsolePage.escape(review.comment))</li>"
            }.joined()
            let current = events.last(where: { $0.payload != nil })?.version ?? 1
            let body = """
                <p class="muted">Form \(ConsolePage.escape(events.first?.form ?? "")) · id \(events.first?.entityID ?? 0)</p>
                <h2>Versions</h2><div class="versions">\(columns)</div>
                <h2>Files</h2>\(media.isEmpty ? "<p class=\"muted\">None.</p>" : media)
                <h2>Reviews</h2>\(reviews.isEmpty ? "<p class=\"muted\">None yet.</p>" : "<ul id=\"reviews\">\(reviews)</ul>")
                <form method="post" action="/console/documents/\(ConsolePage.escape(id))/review" class="review" id="review">
                <input type="hidden" name="csrf" value="\(Self.csrf(token))"><input type="hidden" name="version" value="\(current)">
                <label for="verdict">Verdict on version \(current)</label>
                <select id="verdict" name="verdict"><option value="approved">Approved</option><option value="has-issues">Has issues</option><option value="rejected">Rejected</option></select>
                <label for="comment">Comment for the person who sent it</label><textarea id="comment" name="comment" rows="3"></textarea>
                <label for="pointer">Field at fault (a pointer such as #/proof_photos/0, optional)</label><input type="text" id="pointer" name="pointer">
                <label for="detail">What is wrong with it</label><input type="text" id="detail" name="detail">
                <p><button type="submit" id="send-review">Send the review</button></p></form>
                """
            return page("Document \(id)", caller, body)
        } catch {
            return failure(error, "console")
        }
    }

    private func review(_ id: String, _ form: [String: String], _ caller: Caller, token: String) -> HTTPResponse {
        guard let verdict = form["verdict"].flatMap(Review.Verdict.init(rawValue:)) else {
            return page("Refused", caller, "<p>Choose a verdict.</p>", status: 400)
        }
        var issues: [Review.Issue] = []
        if let pointer = form["pointer"], !pointer.isEmpty {
            issues.append(Review.Issue(pointer: pointer, detail: form["detail"].flatMap { $0.isEmpty ? nil : $0 } ?? "See the comment."))
        }
        let asked = ReviewRequest(
            verdict: verdict, version: form["version"].flatMap { Int($0) }, comment: form["comment"], issues: issues.isEmpty ? nil : issues)
        let request = HTTPRequest(
            method: "POST", path: "/documents/\(id)/reviews", query: nil, headers: Self.bearer(token, caller.workspace).headers,
            body: (try? JSONEncoder().encode(asked)) ?? Data())
        let reply = HistoryService(context: context).review(request, caller: caller)
        guard (200..<300).contains(reply.status) else {
            let detail = ((try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any])?["detail"] as? String ?? "refused"
            return page(
                "Refused", caller,
                "<p>\(ConsolePage.escape(detail))</p><p><a href=\"/console/documents/\(ConsolePage.escape(id))\">Back</a></p>",
                status: reply.status)
        }
        return Self.redirect("/console/documents/\(id)")
    }

    private func webhooks(_ caller: Caller, token: String) -> HTTPResponse {
        do {
            let listed = try locked {
                try store.webhooks.webhooks(workspace: caller.workspace).map { webhook in
                    (
                        webhook, try store.webhooks.deliveryCounts(webhook: webhook.id),
                        try store.webhooks.deliveries(webhook: webhook.id, state: nil, limit: 20)
                    )
                }
            }
            var body = listed.isEmpty ? "<p class=\"muted\">No receivers. Register one with POST /webhooks.</p>" : ""
            for (webhook, counts, deliveries) in listed {
                var rows = ""
                for delivery in deliveries {
                    let action =
                        delivery.state == .dead
                        ? "<form method=\"post\" action=\"/console/webhooks/\(webhook.id)/deliveries/\(delivery.id)/resend\"><input type=\"hidden\" name=\"csrf\" value=\"\(Self.csrf(token))\"><button type=\"submit\">Resend</button></form>"
                        : ""
                    rows += """
                        <tr><td>\(delivery.eventID)</td><td>\(delivery.event.rawValue)</td><td>\(ConsolePage.escape(delivery.documentID))</td>
                        <td class="\(delivery.state.rawValue)">\(delivery.state.rawValue)</td><td>\(delivery.attempts)</td>
                        <td>\(delivery.lastStatus.map(String.init) ?? "—")</td><td>\(ConsolePage.escape(delivery.lastError ?? ""))</td><td>\(action)</td></tr>
                        """
                }
                body += """
                    <h2>\(ConsolePage.escape(webhook.url))</h2>
                    <p class="muted">events \(webhook.events.map(\.rawValue).joined(separator: ", ")) · \(counts.pending) pending · <span class="dead">\(counts.dead) dead</span> · registered by \(ConsolePage.escape(webhook.createdBy))</p>
                    <table><tr><th>Event</th><th>Kind</th><th>Document</th><th>State</th><th>Attempts</th><th>Last status</th><th>Last error</th><th></th></tr>\(rows)</table>
                    """
            }
            return page("Webhooks", caller, body)
        } catch {
            return failure(error, "console")
        }
    }

    private func resend(_ path: String, _ caller: Caller, token: String) -> HTTPResponse {
        let request = HTTPRequest(
            method: "POST", path: String(path.dropFirst("/console".count)), query: nil,
            headers: Self.bearer(token, caller.workspace).headers,
            body: Data())
        _ = WebhookService(context: context).resend(request, caller: caller)
        return Self.redirect("/console/webhooks")
    }

    private func devices(_ caller: Caller) -> HTTPResponse {
        do {
            let devices = try locked { try store.devices(workspace: caller.workspace, principal: nil, limit: DeviceService.maxListed) }
            let rows = devices.map { device in
                """
                <tr><td>\(ConsolePage.escape(device.id))</td><td>\(ConsolePage.escape(device.grant.principal))</td><td>\(ConsolePage.escape(device.name))</td>
                <td>\(ConsolePage.escape(device.appVersion))</td><td>\(WireSyntax.timestamp(device.lastSeenAt))</td>
                <td class="\(device.revokedAt == nil ? "delivered" : "dead")">\(device.revokedAt == nil ? "active" : "revoked: " + ConsolePage.escape(device.revokedReason ?? ""))</td></tr>
                """
            }.joined()
            return page(
                "Devices", caller,
                "<table><tr><th>Device</th><th>Principal</th><th>Name</th><th>App</th><th>Last seen</th><th>State</th></tr>\(rows)</table>")
        } catch {
            return failure(error, "console")
        }
    }

    private func file(_ id: String, _ caller: Caller) -> HTTPResponse {
        guard let fileID = Int64(id), fileID > 0 else { return HTTPResponse(status: 404) }
        let found = locked { () -> (StoredFile, Data)? in
            guard let stored = try? store.storedFile(id: fileID), stored.workspace == caller.workspace, let bytes = store.fileBytes(fileID)
            else { return nil }
            return (stored, bytes)
        }
        guard let (stored, bytes) = found else { return HTTPResponse(status: 404) }
        let type = (stored.mediaType?.isEmpty == false ? stored.mediaType : nil) ?? "application/octet-stream"
        return HTTPResponse(
            status: 200,
            headers: [("Content-Type", type), ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "private, max-age=3600")],
            body: bytes)
    }

    // MARK: Helpers

    static let htmlHeaders = [
        ("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store"), ("X-Frame-Options", "DENY"),
        ("Content-Security-Policy", "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; form-action 'self'"),
        ("Referrer-Policy", "no-referrer"),
    ]

    private func page(_ title: String, _ caller: Caller, _ body: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: Self.htmlHeaders, body: ConsolePage.page(title, workspace: caller.workspace, body))
    }

    static func redirect(_ location: String, cookie: String? = nil) -> HTTPResponse {
        HTTPResponse(
            status: 303, headers: [("Location", location), ("Cache-Control", "no-store")] + (cookie.map { [("Set-Cookie", $0)] } ?? []))
    }

    /// An `application/x-www-form-urlencoded` body (a `+` is a space), each name once.
    static func formFields(_ body: Data) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body.prefix(maxBodyBytes), as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            }
            guard parts.count == 2, let name = parts[0], let value = parts[1], fields[name] == nil else { continue }
            fields[name] = value
        }
        return fields
    }

    /// A payload's leaves as (pointer, text), in order, without recursion.
    static func fields(_ payload: Data?) -> [(String, String)] {
        guard let value = payload.flatMap(FieldDiff.value) else { return [] }
        var found: [(String, String)] = []
        var stack: [(String, WireValue)] = [("#", value)]
        while let (pointer, value) = stack.popLast() {
            switch value {
            case .object(let members): for key in members.keys.sorted().reversed() { stack.append((pointer + "/" + key, members[key]!)) }
            case .array(let items): for (index, item) in items.enumerated().reversed() { stack.append((pointer + "/\(index)", item)) }
            case .string(let text): found.append((pointer, text))
            case .integer(let number): found.append((pointer, String(number)))
            case .number(let number): found.append((pointer, String(number)))
            case .bool(let flag): found.append((pointer, flag ? "true" : "false"))
            case .null: found.append((pointer, ""))
            }
        }
        return found
    }
}
