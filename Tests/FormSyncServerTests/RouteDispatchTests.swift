import CorpusForms
import FormSyncHTTP
import FormSyncProtocol
import FormSyncServer
import Foundation
import Testing

/// The server answers every route of the table by the route's own handler (never "no route"),
/// and a wrong method on a fixed path is `405`, on any other path `404`.
struct RouteDispatchTests {
    static func path(of route: Route) -> String {
        switch route {
        case .fileLookup: return "/files/sha-256/" + String(repeating: "a", count: 64)
        case .submission: return "/plates"
        default:
            return route.template.replacingOccurrences(of: "<document id>", with: "doc-1").replacingOccurrences(of: "<type>", with: "Plate")
                .replacingOccurrences(of: "<id>", with: "1").replacingOccurrences(of: "<hex>", with: "a")
        }
    }

    @Test func everyRouteOfTheTableReachesItsHandlerAndAWrongMethodIs405OrNoRoute() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("routes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.path, forms: FormCatalog.forms, records: FormCatalog.records)
        let token = try server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        func send(_ method: String, _ path: String) -> (status: Int, code: ProblemCode?) {
            let reply = server.handle(
                HTTPRequest(
                    method: method, path: path, query: nil,
                    headers: [
                        "authorization": "Bearer \(token)", "formsync-workspace": "acme", "idempotency-key": UUID().uuidString,
                        "formsync-document": "doc-\(UUID().uuidString)",
                    ], body: Data()))
            let json = reply.flatMap { try? JSONSerialization.jsonObject(with: $0.body) as? [String: Any] }
            return (reply?.status ?? 0, (json?["code"] as? String).flatMap(ProblemCode.init(rawValue:)))
        }
        for route in Route.allCases {
            let reply = send(route.method, Self.path(of: route))
            #expect(reply.status != 0, "\(route): no reply")
            #expect(
                reply.code != .noRoute && reply.code != .methodNotAllowed,
                "\(route.method) \(Self.path(of: route)) was not dispatched: \(reply)")
        }
        #expect(send("GET", "/health").status == 200)
        #expect(send("DELETE", "/health").code == .methodNotAllowed)
        #expect(send("PUT", "/uploads").code == .methodNotAllowed)
        #expect(send("PUT", "/files/3").code == .noRoute)
        #expect(send("GET", "/nowhere").code == .noRoute)
    }
}
