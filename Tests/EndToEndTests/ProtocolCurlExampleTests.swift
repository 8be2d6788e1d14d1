import FieldForms
import FormSyncHTTP
import FormSyncServer
import Foundation
import Testing

/// Issue 44, defect 15: PROTOCOL.md's curl example named a form version the server no longer
/// takes. Its request is read from the document and sent to the reference server as written.
struct ProtocolCurlExampleTests {
    @Test func theCurlExampleInPROTOCOLmdCreatesACustomerOnTheReferenceServer() throws {
        let text = try String(contentsOf: CommandLineTests.root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        let section = try #require(text.range(of: "## 10. Trying it with curl").map { text[$0.upperBound...] })
        let post = try #require(section.range(of: "curl -s -X POST").map { section[$0.lowerBound...] })
        let command = String(post.prefix { $0 != "`" }).replacingOccurrences(of: "\\\n", with: " ")
        // The headers (-H "Name: value"), the path and the body (-d '…') as the example writes them.
        var headers: [String: String] = [:]
        for part in command.components(separatedBy: "-H \"").dropFirst() {
            let header = part.prefix { $0 != "\"" }
            guard let colon = header.firstIndex(of: ":") else { continue }
            headers[header[..<colon].lowercased()] = String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        }
        let path = try #require(command.split(separator: " ").first { $0.hasPrefix("localhost:8080/") }).dropFirst("localhost:8080".count)
        let body = try #require(command.components(separatedBy: "-d '").dropFirst().first?.prefix { $0 != "'" })

        #expect(headers["formsync-form"] == "NewCustomer; version=\(NewCustomer.formVersion)", "the example names the current version")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("curl-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.path, forms: FormCatalog.forms, records: FormCatalog.records, workspace: "default")
        headers["authorization"] = "Bearer \(try server.issueAccessToken(principal: "curl", workspaces: ["default"]))"
        let reply = server.handle(HTTPRequest(method: "POST", path: String(path), query: nil, headers: headers, body: Data(body.utf8)))
        #expect(reply?.status == 201, "\(command)\n→ \(String(decoding: reply?.body ?? Data(), as: UTF8.self))")
    }
}
