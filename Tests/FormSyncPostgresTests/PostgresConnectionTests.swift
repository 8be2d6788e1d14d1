import FormSyncPostgres
import FormSyncTesting
import FormSyncTorture
import Foundation
import Testing

/// The libpq layer against a real PostgreSQL that the tests start themselves.
struct PostgresConnectionTests {
    @Test func valuesRoundTripThroughARealServerWithTheirTypes() async throws {
        try await OffThePool.run {
            let connection = try PostgresConnection(url: try PostgresCluster.shared().makeDatabase())
            try connection.run("CREATE TABLE t (i BIGINT, s TEXT, b BYTEA, n INTEGER, f BOOLEAN)")
            let blob = Data((0..<300).map { UInt8($0 % 256) })
            try connection.query("INSERT INTO t VALUES ($1, $2, $3, 7, true)", [.integer(-42), .text("zwölf 🍐"), .bytes(blob)])
            try connection.query("INSERT INTO t VALUES ($1, $2, $3, NULL, NULL)", [.integer(Int64.max), .null, .bytes(Data())])
            let rows = try connection.query("SELECT i, s, b, n, f FROM t ORDER BY i")
            #expect(rows.count == 2)
            #expect(rows.int(0, 0) == -42)
            #expect(rows.text(0, 1) == "zwölf 🍐")
            #expect(rows.bytes(0, 2) == blob)
            #expect(rows.int(0, 3) == 7)
            #expect(rows.int(0, 4) == 1)
            #expect(rows.int(1, 0) == Int64.max)
            #expect(rows.text(1, 1) == nil)
            #expect(rows.bytes(1, 2) == Data())
            #expect(rows.isNull(1, 3))
        }
    }

    @Test func aBrokenConstraintIsAnErrorWithItsSQLState() throws {
        let connection = try PostgresConnection(url: try PostgresCluster.shared().makeDatabase())
        try connection.run("CREATE TABLE u (k TEXT PRIMARY KEY)")
        try connection.query("INSERT INTO u VALUES ($1)", [.text("a")])
        #expect {
            try connection.query("INSERT INTO u VALUES ($1)", [.text("a")])
        } throws: { ($0 as? PostgresError)?.isUniqueViolation == true }
    }

    @Test func aServerThatIsNotThereIsAConnectionErrorWithoutThePassword() throws {
        let error = #expect(throws: PostgresError.self) {
            _ = try PostgresConnection(url: "postgres://someone:secret@127.0.0.1:1/nothing", timeoutSeconds: 2)
        }
        #expect(error?.isConnectionLost == true)
        #expect(error?.description.contains("secret") == false)
    }
}
