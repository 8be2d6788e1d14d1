import FieldForms
import FormSyncHTTP
import FormSyncModel
import FormSyncPostgres
import FormSyncTorture
import Foundation
import Testing

@testable import FormSyncServer

/// The access rules of docs/PROTOCOL.md ("Access rules"), cell by cell: every route × {the
/// workspace the token is for, a workspace it is not for, no header, another workspace the token
/// is also for} × {the principal that owns the data, another principal, the back office}. Each
/// expected status is the one the table in PROTOCOL.md states.
struct WallMatrixTests {
    /// What principal `ada` holds in workspace `acme`: a document, a file, an upload begun,
    /// and a delivery in her scope; and the server that holds them.
    final class Setup: @unchecked Sendable {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("wall-\(UUID().uuidString)")
        let server: SyncServer
        var tokens: [String: String] = [:]
        var documentID = "doc-ada"
        var fileDocument = "file-ada"
        let photo = Data("ada's photo".utf8)
        var uploadPath = ""
        var customerID: Int64 = 0
        var fileID: Int64 = 0
        var deliveryID: Int64 = 0
        var key = 0

        init() throws {
            server = try TestStore.server(directory: folder.path, forms: FormCatalog.forms, records: FormCatalog.records)
            tokens["ada"] = try server.issueAccessToken(principal: "ada", workspaces: ["acme"])
            tokens["bob"] = try server.issueAccessToken(principal: "bob", workspaces: ["acme"])
            tokens["office"] = try server.issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
            tokens["ada-both"] = try server.issueAccessToken(principal: "ada", workspaces: ["acme", "globex"])
            deliveryID = try server.putRecord(
                Delivery(courierId: "ada", status: .assigned, stopOrder: 1, address: "Rua 1"), workspace: "acme"
            ).id
            _ = try server.putRecord(Delivery(courierId: "ada", status: .assigned, stopOrder: 1, address: "Elsewhere"), workspace: "globex")

            let created = handle(submission(token: "ada", workspace: "acme", ifMatch: nil))
            guard created.status == 201 else { throw SetupFailed(step: "create", status: created.status) }
            customerID = (try JSONSerialization.jsonObject(with: created.body) as? [String: Any])?["id"] as? Int64 ?? 0
            let stored = handle(file(token: "ada", workspace: "acme"))
            guard stored.status == 201 else { throw SetupFailed(step: "file", status: stored.status) }
            fileID = ((try JSONSerialization.jsonObject(with: stored.body) as? [String: Any])?["id"] as? NSNumber)?.int64Value ?? 0
            let upload = handle(uploadCreate(token: "ada", workspace: "acme"))
            guard upload.status == 201 else { throw SetupFailed(step: "upload", status: upload.status) }
            uploadPath = upload.headers.first { $0.0 == "Location" }?.1 ?? ""
        }

        deinit { try? FileManager.default.removeItem(at: folder) }

        func handle(_ request: HTTPRequest) -> HTTPResponse {
            server.handle(request) ?? HTTPResponse(status: 0, headers: [], body: Data())
        }

        func headers(token: String, workspace: String?) -> [String: String] {
            key += 1
            var headers = ["authorization": "Bearer \(tokens[token] ?? token)", "idempotency-key": "k-\(key)"]
            if let workspace { headers["formsync-workspace"] = workspace }
            return headers
        }

        func submission(token: String, workspace: String?, ifMatch: String? = "*") -> HTTPRequest {
            var headers = headers(token: token, workspace: workspace)
            headers["formsync-document"] = documentID
            headers["formsync-form"] = "NewCustomer; version=1"
            headers["content-type"] = "application/json"
            if let ifMatch { headers["if-match"] = ifMatch }
            let body = try! FormRegistry.encode(NewCustomer(name: "Ana \(key)", segment: .retail))
            return HTTPRequest(method: "POST", path: "/customers", query: nil, headers: headers, body: body)
        }

        func file(token: String, workspace: String?) -> HTTPRequest {
            var headers = headers(token: token, workspace: workspace)
            headers["formsync-document"] = fileDocument
            headers["content-type"] = "image/jpeg"
            headers["content-digest"] = "sha-256=:\(SHA256.hash(photo).base64EncodedString()):"
            return HTTPRequest(method: "POST", path: "/files", query: nil, headers: headers, body: photo)
        }

        func uploadCreate(token: String, workspace: String?) -> HTTPRequest {
            var headers = headers(token: token, workspace: workspace)
            headers["formsync-document"] = "upload-ada"
            headers["upload-length"] = "100"
            headers["repr-digest"] = "sha-256=:\(SHA256.hash(Data(count: 100)).base64EncodedString()):"
            headers["upload-complete"] = "?0"
            return HTTPRequest(method: "POST", path: "/uploads", query: nil, headers: headers, body: Data())
        }

        func request(_ route: Route, token: String, workspace: String?) -> HTTPRequest {
            switch route {
            case .submission: return submission(token: token, workspace: workspace)
            case .document:
                return HTTPRequest(
                    method: "GET", path: "/documents/\(documentID)", query: nil, headers: headers(token: token, workspace: workspace),
                    body: Data())
            case .file: return file(token: token, workspace: workspace)
            case .fileFetch:
                return HTTPRequest(
                    method: "GET", path: "/files/\(fileID)", query: nil, headers: headers(token: token, workspace: workspace), body: Data())
            case .uploadCreate: return uploadCreate(token: token, workspace: workspace)
            case .uploadOffset:
                return HTTPRequest(
                    method: "HEAD", path: uploadPath, query: nil, headers: headers(token: token, workspace: workspace), body: Data())
            case .uploadAppend:
                var headers = headers(token: token, workspace: workspace)
                headers["upload-offset"] = "0"
                headers["upload-complete"] = "?0"
                return HTTPRequest(method: "PATCH", path: uploadPath, query: nil, headers: headers, body: Data())
            case .changes:
                return HTTPRequest(
                    method: "GET", path: "/changes", query: "limit=1000", headers: headers(token: token, workspace: workspace), body: Data()
                )
            case .customer:
                return HTTPRequest(
                    method: "GET", path: "/records/Customer/\(customerID)", query: nil,
                    headers: headers(token: token, workspace: workspace), body: Data())
            case .scopedRecord:
                return HTTPRequest(
                    method: "GET", path: "/records/Delivery/\(deliveryID)", query: nil,
                    headers: headers(token: token, workspace: workspace), body: Data())
            case .health:
                return HTTPRequest(
                    method: "GET", path: "/health", query: nil, headers: headers(token: token, workspace: workspace), body: Data())
            }
        }
    }

    struct SetupFailed: Error {
        var step: String
        var status: Int
    }

    enum Route: String, CaseIterable {
        case submission = "POST /customers (edit, If-Match: *)"
        case document = "GET /documents/{id}"
        case file = "POST /files"
        case fileFetch = "GET /files/{id} (no record names it)"
        case uploadCreate = "POST /uploads"
        case uploadOffset = "HEAD /uploads/{id}"
        case uploadAppend = "PATCH /uploads/{id}"
        case changes = "GET /changes"
        case customer = "GET /records/Customer/{id} (no scope)"
        case scopedRecord = "GET /records/Delivery/{id} (ada's scope)"
        case health = "GET /health"
    }

    /// The statuses of docs/PROTOCOL.md's table for one route, by caller: ada (the owner), bob
    /// (another principal), the back office, all naming `acme`.
    static let ownWorkspace: [Route: (ada: Int, bob: Int, office: Int)] = [
        .submission: (200, 409, 200),
        .document: (200, 404, 200),
        .file: (200, 409, 200),
        .fileFetch: (200, 404, 200),
        .uploadCreate: (201, 409, 201),
        .uploadOffset: (204, 404, 204),
        .uploadAppend: (204, 404, 204),
        .changes: (200, 200, 200),
        .customer: (200, 200, 200),
        .scopedRecord: (200, 404, 200),
        .health: (200, 200, 200),
    ]

    /// Ada's token, issued for acme and globex, naming globex: nothing of acme is reached.
    static let otherGrantedWorkspace: [Route: Int] = [
        .submission: 409, .document: 404, .file: 409, .fileFetch: 404, .uploadCreate: 409, .uploadOffset: 404, .uploadAppend: 404,
        .changes: 200, .customer: 404, .scopedRecord: 404, .health: 200,
    ]

    @Test func everyRouteKeepsWorkspacesAndPrincipalsApartAsTheProtocolTableSays() throws {
        let setup = try Setup()
        var cells = 0
        for route in Route.allCases {
            let expected = try #require(Self.ownWorkspace[route])
            for (caller, status) in [("ada", expected.ada), ("bob", expected.bob), ("office", expected.office)] {
                let reply = setup.handle(setup.request(route, token: caller, workspace: "acme"))
                #expect(reply.status == status, "\(route.rawValue) by \(caller) in acme")
                // A workspace the token is not issued for, and no workspace at all.
                let foreign = setup.handle(setup.request(route, token: caller, workspace: "globex"))
                #expect(foreign.status == (route == .health ? 200 : 403), "\(route.rawValue) by \(caller) naming globex")
                let none = setup.handle(setup.request(route, token: caller, workspace: nil))
                #expect(none.status == (route == .health ? 200 : 400), "\(route.rawValue) by \(caller) with no workspace")
                if route != .health, none.status == 400 { #expect(String(decoding: none.body, as: UTF8.self).contains("bad-workspace")) }
                cells += 3
            }
            let across = setup.handle(setup.request(route, token: "ada-both", workspace: "globex"))
            #expect(
                across.status == Self.otherGrantedWorkspace[route],
                "\(route.rawValue) by ada naming globex, a workspace her token is also for")
            cells += 1
        }
        #expect(cells == Route.allCases.count * 10)
    }

    @Test func noReplyToAnotherPrincipalOrWorkspaceCarriesTheirData() throws {
        let setup = try Setup()
        for route in Route.allCases where route != .health {
            for (caller, workspace) in [("bob", "acme"), ("ada-both", "globex"), ("bob", "globex"), ("bob", nil)] {
                let body = String(decoding: setup.handle(setup.request(route, token: caller, workspace: workspace)).body, as: UTF8.self)
                // The Customer record the document created has no scope: every device of acme
                // receives it (the feed, GET /records); ada's document itself stays hers.
                let sharedRecord = caller == "bob" && workspace == "acme" && [.changes, .customer].contains(route)
                #expect(
                    sharedRecord || !body.contains("Ana "), "\(route.rawValue) by \(caller) in \(workspace ?? "none") shows ada's customer")
                #expect(!body.contains("Rua 1"), "\(route.rawValue) by \(caller) in \(workspace ?? "none") shows ada's delivery")
            }
        }
        // The feed of ada's globex token carries globex's delivery, never acme's.
        let feed = String(decoding: setup.handle(setup.request(.changes, token: "ada-both", workspace: "globex")).body, as: UTF8.self)
        #expect(feed.contains("Elsewhere") && !feed.contains("Rua 1"))
        // The back office's feed carries every scope of its workspace.
        let office = String(decoding: setup.handle(setup.request(.changes, token: "office", workspace: "acme")).body, as: UTF8.self)
        #expect(office.contains("Rua 1") && office.contains("Ana "))
    }

    @Test func anotherPrincipalCannotCreateEditOrReplayUnderADocumentItDoesNotOwn() throws {
        let setup = try Setup()
        // bob creating under ada's document id gets no record of hers, with or without If-Match.
        for ifMatch in [nil, "*", "\"1\""] as [String?] {
            let reply = setup.handle(setup.submission(token: "bob", workspace: "acme", ifMatch: ifMatch))
            #expect(reply.status == 409)
            #expect(String(decoding: reply.body, as: UTF8.self).contains("document-principal-mismatch"))
        }
        #expect(setup.server.document(setup.documentID)?.appliedWrites == 1)
        // A form document cannot take an upload's or a file's id.
        setup.documentID = "upload-ada"
        #expect(setup.handle(setup.submission(token: "ada", workspace: "acme", ifMatch: nil)).status == 409)
        setup.documentID = "file-ada"
        #expect(setup.handle(setup.submission(token: "ada", workspace: "acme", ifMatch: nil)).status == 409)
    }

    @Test func tokensAreStoredOnlyAsDigests() throws {
        let setup = try Setup()
        let refresh = try setup.server.issueRefreshToken(principal: "ada", workspaces: ["acme"])
        setup.server.stop()
        let database: Data
        if let postgres = setup.server.store as? PostgresServerStore {
            // Every byte of the grants table, as PostgreSQL returns it.
            let rows = try PostgresConnection(url: postgres.url).query(
                "SELECT digest, kind, principal, role, workspaces, expires_at::text FROM grants")
            database = (0..<rows.count).reduce(into: Data()) { all, row in
                for column in 0..<6 { all.append(rows.bytes(row, column) ?? Data()) }
            }
        } else {
            database =
                try Data(contentsOf: setup.folder.appendingPathComponent("server.sqlite"))
                + ((try? Data(contentsOf: setup.folder.appendingPathComponent("server.sqlite-wal"))) ?? Data())
        }
        for token in Array(setup.tokens.values) + [refresh] {
            #expect(database.range(of: Data(token.utf8)) == nil, "a token is stored in plaintext")
            #expect(database.range(of: SHA256.hash(Data(token.utf8))) != nil, "a token's digest is not stored")
        }
    }
}

/// Issue 31, 15: every file the server creates is its owner's alone, whatever the umask.
struct ServerFileModeTests {
    @Test func theServersDatabaseFilesAndFoldersAreOwnerOnly() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("modes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms)
        let token = try server.issueAccessToken(workspaces: ["acme"])
        #expect(server.handle(ServerFileDurabilityTests.file(Data("bytes".utf8), document: "f1", token: token))?.status == 201)
        var upload = ServerFileDurabilityTests.file(Data(), document: "u1", token: token)
        upload.path = "/uploads"
        upload.headers["upload-length"] = "10"
        upload.headers["repr-digest"] = upload.headers["content-digest"]
        #expect(server.handle(upload)?.status == 201)
        server.stop()
        var checked = 0
        let root = folder.appendingPathComponent("server").path
        for relative in [""] + (FileManager.default.subpaths(atPath: root) ?? []) {
            let path = (root as NSString).appendingPathComponent(relative)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let mode = (attributes[.posixPermissions] as? Int ?? 0o777) & 0o777
            let isFolder = attributes[.type] as? FileAttributeType == .typeDirectory
            #expect(
                mode == (isFolder ? 0o700 : 0o600),
                "\(relative.isEmpty ? "the server's folder" : relative) has mode \(String(mode, radix: 8))")
            checked += 1
        }
        #expect(checked >= 6, "the folder, server.sqlite and its log, files/, a stored file, uploads/ and a part")
    }
}

/// A token that could never be used is refused when it is issued, not found out at the first request.
struct GrantValidationTests {
    @Test func aTokenForNoWorkspaceOrAMalformedOneIsRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("grants-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try TestStore.server(directory: folder.path, forms: FormCatalog.forms)
        #expect(throws: SyncServer.GrantError.self) { try server.issueAccessToken(workspaces: []) }
        #expect(throws: SyncServer.GrantError.self) { try server.issueRefreshToken(workspaces: ["acme", "has space"]) }
        #expect(throws: SyncServer.GrantError.self) { try server.issueAccessToken(principal: "", workspaces: ["acme"]) }
        #expect(throws: SyncServer.GrantError.self) { try server.issueAccessToken(principal: "a\nb", workspaces: ["acme"]) }
        #expect(try server.issueAccessToken(principal: "ada", workspaces: ["acme", "globex"]).hasPrefix("a-"))
    }
}
