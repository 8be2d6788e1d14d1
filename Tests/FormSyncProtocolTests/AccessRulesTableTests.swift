import FormSyncProtocol
import Foundation
import Testing

/// docs/PROTOCOL.md's access rules are the route table's: the table has a row for every route
/// and names no other, and its first two columns say what `Route.needsAccessToken` says (a
/// route that needs a token answers 401 without one and 400 without a workspace; the others
/// answer without either).
struct AccessRulesTableTests {
    /// The table's rows: the routes each names, and its cells.
    static func rows() throws -> [(routes: [Route], cells: [String])] {
        let text = try RouteTests.protocolText()
        let section = try #require(text.components(separatedBy: "### Access rules").dropFirst().first)
        let table = section.components(separatedBy: "\n## ").first ?? ""
        var rows: [(routes: [Route], cells: [String])] = []
        for line in table.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast().map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            rows.append((routes(named: cells.first ?? ""), cells))
        }
        return rows
    }

    /// The routes a first cell names: `` `GET /files/<id>` ``, or `` `HEAD`, `PATCH /uploads/<id>` ``
    /// (methods before one path), with each placeholder standing for a value.
    static func routes(named cell: String) -> [Route] {
        let spans = cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        guard let last = spans.last else { return [] }
        let words = last.split(separator: " ", maxSplits: 1)
        guard words.count == 2 else { return [] }
        let path = words[1].replacingOccurrences(of: "<form endpoint>", with: "/some/form")
            .replacingOccurrences(of: "<hex>", with: String(repeating: "a", count: 64))
            .replacingOccurrences(of: #"<[^>]+>"#, with: "x1", options: .regularExpression)
        let methods = spans.dropLast().map(String.init) + [String(words[0])]
        return methods.compactMap { Route.match(method: $0, path: path) }
    }

    @Test func theTableHasARowForEveryRouteAndNoOther() throws {
        let rows = try Self.rows()
        #expect(rows.count >= 10)
        for row in rows { #expect(!row.routes.isEmpty, "the row \(row.cells.first ?? "") names no route") }
        let named = Set(rows.flatMap(\.routes))
        #expect(
            named == Set(Route.allCases), "missing: \(Set(Route.allCases).subtracting(named)); extra: \(named.subtracting(Route.allCases))")
    }

    @Test func theTokenAndWorkspaceColumnsSayWhatTheTableOfRoutesSays() throws {
        for row in try Self.rows() {
            let (token, workspace) = (row.cells[1], row.cells[2])
            for route in row.routes {
                if route.needsAccessToken {
                    #expect(token == "401" && workspace.hasPrefix("400"), "\(route): \(token) | \(workspace)")
                } else {
                    #expect(token != "401", "\(route) needs no access token: \(token)")
                    #expect(workspace == "200" || workspace == "(not read)", "\(route) reads no workspace: \(workspace)")
                }
            }
        }
    }

    @Test func aFirstCellIsReadAsItsRoutes() {
        #expect(Self.routes(named: "`HEAD`, `PATCH /uploads/<id>`") == [.uploadOffset, .uploadAppend])
        #expect(Self.routes(named: "`POST <form endpoint>` (create or edit a document)") == [.submission])
        #expect(Self.routes(named: "`GET /files/sha-256/<hex>`") == [.fileLookup])
        #expect(Self.routes(named: "edit forms (`edits:`)").isEmpty)
    }

    @Test func theRevokedDeviceColumnRefusesEveryRouteThatTakesACredential() throws {
        let rows = try Self.rows()
        #expect(rows.allSatisfy { $0.cells.count == 9 }, "every row has nine cells")
        for row in rows {
            let revoked = row.cells[8]
            for route in row.routes {
                switch route {
                case .health: #expect(revoked == "200")
                case .enrol: #expect(revoked == "—", "an enrolment carries a code, not a device's credential")
                default: #expect(revoked == "401 `device-revoked`", "\(route): \(revoked)")
                }
            }
        }
    }

    @Test func theDeviceColumnsRefuseTheBackOfficesRoutes() throws {
        for row in try Self.rows() {
            for route in row.routes where route.isBackOfficeOnly {
                #expect(row.cells[5] == "403 `back-office-only`" && row.cells[6] == "403 `back-office-only`", "\(route)")
            }
            for route in row.routes where !route.isBackOfficeOnly {
                #expect(!row.cells[5].contains("back-office-only"), "\(route) is not the back office's alone")
            }
        }
    }
}
