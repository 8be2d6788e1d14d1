import CorpusForms
import FormSyncHTTP
import FormSyncServer
import Foundation
import Testing

/// Issue 44, defect 15: on a server that hosts one workspace, a malformed `FormSync-Workspace`
/// was `421 wrong-workspace` (echoing the header), where PROTOCOL.md says `400 bad-workspace`.
struct WorkspaceHeaderTests {
    @Test func aMalformedWorkspaceIs400EvenOnAServerOfOneWorkspaceAndAnotherWorkspaceIs421() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workspace-header-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.path, forms: FormCatalog.forms, records: FormCatalog.records, workspace: "acme")
        let token = try server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        func get(_ workspace: String) -> (status: Int, body: String) {
            let reply = server.handle(
                HTTPRequest(
                    method: "GET", path: "/changes", query: "limit=1",
                    headers: ["authorization": "Bearer \(token)", "formsync-workspace": workspace], body: Data()))
            return (reply?.status ?? 0, String(decoding: reply?.body ?? Data(), as: UTF8.self))
        }
        for malformed in ["ac me", "", String(repeating: "w", count: 300), "acme\u{7}", "../acme"] {
            let reply = get(malformed)
            #expect(reply.status == 400, "\(malformed.debugDescription): \(reply.body)")
            #expect(reply.body.contains("bad-workspace"))
        }
        let other = get("globex")
        #expect(other.status == 421)
        #expect(other.body.contains("wrong-workspace"))
        #expect(get("acme").status == 200)
    }
}
