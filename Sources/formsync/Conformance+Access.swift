import FormSpec
import FormSyncCommandLine
import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The access rules route by route, and what only a raw socket can send (docs/PROTOCOL.md §1,
/// "Access rules").
extension Conformance {
    mutating func wall(held: Held?, upload: (document: String, location: String)) async {
        /// A route of the table, as the wall checks it: a concrete path, its headers and body.
        struct WallRoute {
            var route: Route
            var path: String
            var headers: [String: String]
            var body: Data?
            /// What another principal gets, and the back office.
            var other: Int
            var office: Int
            /// How the verdicts name it (the route as PROTOCOL.md writes it, unless said).
            var named: String? = nil
            var name: String { named ?? "\(route.method) \(route.template)" }
            var method: String { route.method }
        }
        let bytes = Data("conformance file \(run)".utf8)
        let digest = "sha-256=:\(SHA256.hash(bytes).base64EncodedString()):"
        var routes: [WallRoute] = []
        if let held, let (body, path) = encoded(held.form, held.object) {
            routes.append(
                WallRoute(
                    route: .submission, path: path,
                    headers: [
                        ProtocolHeader.document: held.document, ProtocolHeader.form: "\(held.form.name); version=\(held.form.version)",
                        "Content-Type": "application/json", ProtocolHeader.ifMatch: "*",
                    ], body: body, other: 409, office: 200, named: "an edit of a document (If-Match: *)"))
            routes.append(
                WallRoute(route: .document, path: "/documents/\(held.document)", headers: [:], other: 404, office: 200))
        }
        routes += [
            WallRoute(
                route: .fileUpload, path: "/files",
                headers: [ProtocolHeader.document: id("file"), "Content-Type": "text/plain", ProtocolHeader.contentDigest: digest],
                body: bytes, other: 409, office: 200),
            WallRoute(route: .uploadOffset, path: upload.location, headers: [:], other: 404, office: 204),
            WallRoute(
                route: .uploadAppend, path: upload.location,
                headers: [
                    ProtocolHeader.uploadOffset: "0", ProtocolHeader.uploadComplete: "?0", "Content-Type": "application/partial-upload",
                ], body: Data(), other: 404, office: 204),
            WallRoute(route: .changes, path: "/changes", headers: [:], other: 200, office: 200),
        ]
        if let held, let type = held.form.binding?.record, held.form.binding?.action == .creates {
            routes.append(
                WallRoute(route: .record, path: "/records/\(type)/\(held.id)", headers: [:], other: 200, office: 200))
        }
        for index in routes.indices where routes[index].route.isDocumentWrite {
            routes[index].headers[ProtocolHeader.idempotencyKey] = id("wall-\(index)")
        }
        let foreign = String("conformance-not-yours-\(run)".prefix(128))
        for (index, route) in routes.enumerated() {
            var headers = route.headers
            if headers[ProtocolHeader.idempotencyKey] != nil { headers[ProtocolHeader.idempotencyKey] = id("wall-none-\(index)") }
            let none = await send(route.method, route.path, headers: headers, body: route.body, workspace: .none)
            check(
                Rules.noWorkspace, none.status == 400 && (route.method == "HEAD" || none.code == .badWorkspace), Self.describe(none),
                about: route.name)
            if headers[ProtocolHeader.idempotencyKey] != nil { headers[ProtocolHeader.idempotencyKey] = id("wall-foreign-\(index)") }
            let elsewhere = await send(route.method, route.path, headers: headers, body: route.body, workspace: .named(foreign))
            check(Rules.foreignWorkspace, elsewhere.status == 403 || elsewhere.status == 421, Self.describe(elsewhere), about: route.name)
        }
        guard let otherToken, let backOfficeToken else {
            for rule in [Rules.otherPrincipal, Rules.otherPrincipalNothing, Rules.backOffice] {
                notChecked(rule, "give --other-token (another principal of the workspace) and --back-office-token")
            }
            return
        }
        let marker =
            held.flatMap { held in held.object.values.compactMap { $0 as? String }.first { $0.contains(run) } } ?? "conformance file \(run)"
        for (index, route) in routes.enumerated() {
            var headers = route.headers
            if headers[ProtocolHeader.idempotencyKey] != nil { headers[ProtocolHeader.idempotencyKey] = id("wall-other-\(index)") }
            let other = await send(route.method, route.path, headers: headers, body: route.body, as: otherToken)
            check(Rules.otherPrincipal, other.status == route.other, "HTTP \(other.status), not \(route.other)", about: route.name)
            check(
                Rules.otherPrincipalNothing, route.other == 200 || !other.text.contains(marker),
                "the reply holds the other principal's data", about: route.name)
            if headers[ProtocolHeader.idempotencyKey] != nil { headers[ProtocolHeader.idempotencyKey] = id("wall-office-\(index)") }
            let office = await send(route.method, route.path, headers: headers, body: route.body, as: backOfficeToken)
            check(Rules.backOffice, office.status == route.office, "HTTP \(office.status), not \(route.office)", about: route.name)
        }
    }

    /// What URLSession will not send: a body shorter than announced, a control character in a
    /// header, two lengths, a body announced past every limit.
    mutating func rawSocketChecks(form: FormDefinition?, object: [String: Any]?) async {
        let raw = [
            Rules.shortBody, Rules.controlCharacter, Rules.twoLengths, Rules.bodyTooLarge, Rules.headTooLarge, Rules.longTarget,
            Rules.unsupportedEncoding,
        ]
        guard base.scheme == "http", let host = base.host else {
            for rule in raw { notChecked(rule, "over https (it needs a raw socket)") }
            return
        }
        guard let form, let object, let (body, path) = encoded(form, object) else {
            for rule in raw { notChecked(rule, "no valid payload of the specs' forms could be made") }
            return
        }
        let port = UInt16(base.port ?? 80)
        func head(_ document: String, _ key: String, extra: String = "") -> String {
            "POST \(path) HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(token ?? "")\r\nIdempotency-Key: \(key)\r\nFormSync-Document: \(document)\r\n"
                + "FormSync-Workspace: \(workspace)\r\nFormSync-Form: \(form.name); version=\(form.version)\r\nContent-Type: application/json\r\n\(extra)"
        }
        let short = Self.rawStatus(
            host: host, port: port,
            Data((head(id("short"), id("k12"), extra: "Content-Length: \(body.count + 100)\r\n") + "\r\n").utf8) + body)
        let held = await send("GET", "/documents/\(id("short"))")
        check(
            Rules.shortBody, short != 0 && !(200..<300).contains(short) && held.status == 404,
            "HTTP \(short), then GET /documents → \(held.status)")
        let control = Self.rawStatus(
            host: host, port: port,
            Data((head(id("control"), id("k13"), extra: "X-Note: a\u{01}b\r\nContent-Length: \(body.count)\r\n") + "\r\n").utf8) + body)
        check(Rules.controlCharacter, control == 400, "HTTP \(control)")
        let twice = Self.rawStatus(
            host: host, port: port,
            Data((head(id("twice"), id("k14"), extra: "Content-Length: \(body.count)\r\nContent-Length: \(body.count)\r\n") + "\r\n").utf8)
                + body)
        check(Rules.twoLengths, twice == 400, "HTTP \(twice)", about: "Content-Length twice")
        let both = Self.rawStatus(
            host: host, port: port,
            Data((head(id("both"), id("k15"), extra: "Content-Length: \(body.count)\r\nTransfer-Encoding: chunked\r\n") + "\r\n").utf8)
                + body)
        check(Rules.twoLengths, both == 400, "HTTP \(both)", about: "Content-Length and Transfer-Encoding")
        let huge = Self.rawStatus(
            host: host, port: port, Data((head(id("huge"), id("k16"), extra: "Content-Length: \(1 << 40)\r\n") + "\r\n").utf8) + body)
        check(Rules.bodyTooLarge, huge == 413, "HTTP \(huge)", about: "1 TiB announced")
        let bigHead = Self.rawStatus(
            host: host, port: port,
            Data(
                (head(id("big"), id("k17"), extra: "X-Pad: \(String(repeating: "a", count: 17 << 10))\r\nContent-Length: \(body.count)\r\n")
                    + "\r\n").utf8) + body)
        check(Rules.headTooLarge, bigHead == 431, "HTTP \(bigHead)", about: "a 17 KiB header")
        let fields = (0..<101).map { "X-F\($0): 1\r\n" }.joined()
        let many = Self.rawStatus(
            host: host, port: port,
            Data((head(id("many"), id("k18"), extra: fields + "Content-Length: \(body.count)\r\n") + "\r\n").utf8) + body)
        check(Rules.headTooLarge, many == 431, "HTTP \(many)", about: "101 more header fields")
        let target =
            "GET /changes?cursor=\(String(repeating: "c", count: 5000)) HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(token ?? "")\r\nFormSync-Workspace: \(workspace)\r\n\r\n"
        let long = Self.rawStatus(host: host, port: port, Data(target.utf8))
        check(Rules.longTarget, long == 400 || long == 414, "HTTP \(long)")
        let gzip = Self.rawStatus(
            host: host, port: port, Data((head(id("gzip"), id("k19"), extra: "Transfer-Encoding: gzip\r\n") + "\r\n").utf8) + body)
        check(Rules.unsupportedEncoding, gzip == 501, "HTTP \(gzip)")
    }

    /// Sends `bytes` on a new connection, half-closes it, and returns the status the server
    /// answered (0 for none). Bounded: the status line is all that is read, 16 KiB and 10 s at
    /// most, however the peer trickles or floods.
    static func rawStatus(host: String, port: UInt16, _ bytes: Data) -> Int {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        #if canImport(Darwin)
            hints.ai_socktype = SOCK_STREAM
        #elseif canImport(Glibc) || canImport(Musl)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #endif
        var info: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &info) == 0, let first = info else { return 0 }
        defer { freeaddrinfo(info) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else { return 0 }
        Socket.noSignalOnWrite(fd)
        _ = bytes.withUnsafeBytes { Socket.send(fd, $0) }
        shutdown(fd, Int32(SHUT_WR))
        var reply = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ProcessInfo.processInfo.systemUptime + 10
        while reply.count < 16 << 10, !reply.contains(0x0A) {
            let left = deadline - ProcessInfo.processInfo.systemUptime
            guard left > 0 else { break }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(min(left, 10) * 1000) + 1) > 0 else { break }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            reply.append(contentsOf: buffer[0..<n])
        }
        let line = String(decoding: reply.prefix(20), as: UTF8.self).split(separator: " ")
        return line.count > 1 ? Int(line[1]) ?? 0 : 0
    }
}
