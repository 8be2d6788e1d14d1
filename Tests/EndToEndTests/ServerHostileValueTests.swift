import FieldForms
import FormSyncModel
import FormSyncTorture
import Foundation
import Testing

@testable import FormSyncServer

/// The values this version of the server reads differently (tokens through a cache, header
/// values trimmed byte by byte), fed what a hostile client would send.
struct ServerHostileValueTests {
    @Test func theTokenCacheStaysBoundedAndHoldsOnlyTokensTheTableKnows() throws {
        let cache = AccessTokenCache()
        for n in 0...AccessTokenCache.capacity {
            cache.insert("t-\(n)", .init(grant: .init(principal: "p", workspaces: ["acme"]), expiresAt: 1, device: nil, revoked: false))
        }
        #expect(cache.count <= AccessTokenCache.capacity)
        #expect(cache.entry("t-\(AccessTokenCache.capacity)") != nil, "the newest entry survives a start-over")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-tokens-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try TestStore.server(directory: folder.path, forms: FormCatalog.forms)
        let token = try server.issueAccessToken(workspaces: ["acme"])
        var order = try ServerGroupCommitTests.order(1, token: token)
        for forged in ["a-unknown", "", "Bearer", String(repeating: "x", count: 600), "a-\u{0}", "' OR 1=1 --"]
            + (0..<500).map({ "a-\($0)" })
        {
            order.headers["authorization"] = "Bearer \(forged)"
            #expect(server.handle(order)?.status == 401, "\(forged.prefix(20))")
        }
        #expect(server.accessTokens.count == 0, "no unknown token is cached")
        order.headers["authorization"] = "Bearer \(token)"
        #expect(server.handle(order)?.status == 201)
        // Nodes sharing a PostgreSQL store cache no token (another node may revoke it).
        #expect(server.accessTokens.count == (TestStore.isPostgres ? 0 : 1))
    }

    @Test func headerValuesLoseOnlyHTTPsSpacesAndTabs() {
        #expect(WireSyntax.entityTags(" \t\"1\" ,\tW/\"2\" , \"3\"\t ")?.strong == ["\"1\"", "\"3\""])
        #expect(WireSyntax.entityTags("\t*  ")?.any == true)
        #expect(WireSyntax.entityTags("\u{A0}\"1\"") == nil, "a no-break space is not HTTP's whitespace")
        #expect(WireSyntax.entityTags("\"1\" \u{3000}") == nil)
        #expect(WireSyntax.entityTags("") == nil && WireSyntax.entityTags(" , ") == nil)
        #expect(WireSyntax.parseForm("SalesOrder \t;\t version=2 ").map { "\($0.0) \($0.1)" } == "SalesOrder 2")
        #expect(WireSyntax.parseForm("SalesOrder; version=99999999999999999999999") == nil)
        #expect(WireSyntax.parseForm("SalesOrder; version=-1")?.1 == -1, "parsed; the range is checked by the caller")
        #expect(WireSyntax.parseForm(" ; ") == nil && WireSyntax.parseForm("") == nil)
        #expect(WireSyntax.parseDigest(" \tsha-256=:AAAA:\t ") == Data([0, 0, 0]))
        #expect(WireSyntax.parseDigest("\u{A0}sha-256=:AAAA:") == nil)
        #expect("\t \t".trimmingOWS.isEmpty && " a b ".trimmingOWS == "a b")
    }
}

/// Ranges asked of `GET /files/<id>` are read within the file, or refused.
struct ServerByteRangeTests {
    @Test func oneRangeWithinTheFileIsServedAndAnythingElseIsRefused() {
        #expect(WireSyntax.byteRange("bytes=0-9", total: 100)! == (0, 9))
        #expect(WireSyntax.byteRange("bytes=90-", total: 100)! == (90, 99))
        #expect(WireSyntax.byteRange("bytes=90-1000", total: 100)! == (90, 99), "the end is clamped to the file")
        for hostile in [
            "bytes=100-", "bytes=5-4", "bytes=0-5,7-9", "items=0-5", "bytes=99999999999999999999-",
            "bytes=" + String(repeating: "1", count: 60) + "-", "", "bytes=-", "bytes=+5-9", "bytes=5-+9", "bytes=-0", "bytes=--5",
            "bytes=" + String(repeating: "1", count: 200) + "-",
        ] {
            #expect(WireSyntax.byteRange(hostile, total: 100) == nil, "\(hostile)")
        }
        #expect(WireSyntax.byteRange("bytes=0-0", total: 0) == nil, "an empty file has no range to serve")
    }

    /// Issue 44, defect 10: a suffix range and a last position of any length are RFC 9110's.
    @Test func aSuffixRangeAndALastPositionOfAnyLengthAreServedAsRFC9110Says() {
        #expect(WireSyntax.byteRange("bytes=-5", total: 100).map { [$0.0, $0.1] } == [95, 99], "the last five bytes")
        #expect(
            WireSyntax.byteRange("bytes=-500", total: 100).map { [$0.0, $0.1] } == [0, 99], "a suffix longer than the file is all of it")
        #expect(
            WireSyntax.byteRange("bytes=0-99999999999999999999", total: 100).map { [$0.0, $0.1] } == [0, 99],
            "a 20-digit last position is clamped")
        #expect(WireSyntax.byteRange("bytes=-99999999999999999999", total: 100).map { [$0.0, $0.1] } == [0, 99])
        #expect(WireSyntax.byteRange("bytes= 3-4 ", total: 100).map { [$0.0, $0.1] } == [3, 4], "optional whitespace around the range")
    }
}
