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

    /// `later` saves a round trip per statement whose answer nothing reads: such statements wait
    /// for the next statement that needs an answer and run before it, in order, in one pipeline.
    @Test func queuedStatementsRunWithTheNextOneInOrderAndCommitWithTheCommit() async throws {
        try await OffThePool.run {
            let url = try PostgresCluster.shared().makeDatabase()
            let connection = try PostgresConnection(url: url)
            let other = try PostgresConnection(url: url)
            try connection.run("CREATE TABLE q (n BIGINT PRIMARY KEY, at BIGINT NOT NULL)")
            connection.later("INSERT INTO q VALUES (1, 10)")
            connection.later("INSERT INTO q VALUES ($1, $2)", [.integer(2), .integer(20)])
            #expect(try other.query("SELECT COUNT(*) FROM q").int(0, 0) == 0, "nothing is sent before a statement needs an answer")
            let rows = try connection.query("SELECT n FROM q ORDER BY n")
            #expect((0..<rows.count).map { rows.int($0, 0) } == [1, 2])
            try connection.run("BEGIN")
            connection.later("INSERT INTO q VALUES ($1, $2)", [.integer(3), .integer(30)])
            try connection.run("COMMIT")
            #expect(try other.query("SELECT COUNT(*) FROM q WHERE n = 3").int(0, 0) == 1, "the queued write committed with the COMMIT")
        }
    }

    /// `queryEach` sends its statements (after any queued ones) in one round trip and answers
    /// each with its own rows; each sees what the ones before it did, and the first error stops
    /// the rest.
    @Test func statementsSentTogetherAreEachAnsweredInOrderAndTheFirstErrorStopsTheRest() async throws {
        try await OffThePool.run {
            let url = try PostgresCluster.shared().makeDatabase()
            let connection = try PostgresConnection(url: url)
            try connection.run("CREATE TABLE q (n BIGINT PRIMARY KEY)")
            try connection.run("BEGIN")
            connection.later("INSERT INTO q VALUES ($1)", [.integer(1)])
            let before = connection.roundTrips
            let rows = try connection.queryEach([
                ("INSERT INTO q VALUES ($1), ($2) ON CONFLICT DO NOTHING", [.integer(1), .integer(2)]),
                ("SELECT n FROM q WHERE n >= $1 ORDER BY n", [.integer(0)]),
                ("SELECT COUNT(*) FROM q WHERE n = $1", [.integer(9)]),
            ])
            #expect(rows.count == 3)
            #expect(rows[0].affected == 1, "the queued insert ran first: only 2 was new")
            #expect((0..<rows[1].count).map { rows[1].int($0, 0) } == [1, 2])
            #expect(rows[2].int(0, 0) == 0)
            // The four with parameters (the queued one too) were prepared on their first use, one
            // round trip each; then one round trip for all of them.
            #expect(connection.roundTrips - before == 5)
            // A statement without parameters is prepared too (its parse and plan are not paid
            // again each time), once.
            let pair: [(sql: String, parameters: [PostgresValue])] = [
                ("SELECT n FROM q WHERE n >= $1 ORDER BY n", [.integer(2)]), ("SELECT COUNT(*) FROM q", []),
            ]
            _ = try connection.queryEach(pair)
            let again = connection.roundTrips
            let counted = try connection.queryEach(pair)
            #expect(connection.roundTrips - again == 1)
            #expect(counted[1].int(0, 0) == 2)
            let prepared = try connection.query(
                "SELECT COUNT(*) FROM pg_prepared_statements WHERE statement = $1", [.text("SELECT COUNT(*) FROM q")])
            #expect(prepared.int(0, 0) == 1)
            try connection.run("COMMIT")
            let error = #expect(throws: PostgresError.self) {
                try connection.queryEach([
                    ("INSERT INTO q VALUES ($1)", [.integer(3)]), ("INSERT INTO q VALUES ($1)", [.integer(1)]),
                    ("INSERT INTO q VALUES ($1)", [.integer(4)]),
                ])
            }
            #expect(error?.isUniqueViolation == true)
            let left = try connection.query("SELECT n FROM q ORDER BY n")
            #expect(
                (0..<left.count).map { left.int($0, 0) } == [1, 2],
                "outside a transaction the pipeline is one: nothing of it stays, and 4 never ran")
        }
    }

    @Test func theFirstErrorOfAQueuedStatementFailsItsTransactionAndRollbackForgetsWhatWaits() async throws {
        try await OffThePool.run {
            let connection = try PostgresConnection(url: try PostgresCluster.shared().makeDatabase())
            try connection.run("CREATE TABLE q (n BIGINT PRIMARY KEY)")
            try connection.query("INSERT INTO q VALUES (1)")
            try connection.run("BEGIN")
            connection.later("INSERT INTO q VALUES ($1)", [.integer(2)])
            connection.later("INSERT INTO q VALUES ($1)", [.integer(1)])
            connection.later("INSERT INTO q VALUES ($1)", [.integer(3)])
            let error = #expect(throws: PostgresError.self) { try connection.query("SELECT 1") }
            #expect(error?.isUniqueViolation == true)
            #expect(error?.statement.hasPrefix("INSERT INTO q") == true, "the error names the statement that raised it")
            #expect(connection.inTransaction)
            try connection.run("ROLLBACK")
            try connection.run("BEGIN")
            connection.later("INSERT INTO q VALUES ($1)", [.integer(4)])
            try connection.run("ROLLBACK")
            #expect(connection.isUsable)
            let rows = try connection.query("SELECT n FROM q ORDER BY n")
            #expect((0..<rows.count).map { rows.int($0, 0) } == [1], "nothing of either rolled-back transaction is left")
        }
    }

    @Test func aCommitAnsweredRollbackIsAnErrorNotASilentSuccess() async throws {
        try await OffThePool.run {
            let connection = try PostgresConnection(url: try PostgresCluster.shared().makeDatabase())
            try connection.run("CREATE TABLE c (n BIGINT PRIMARY KEY)")
            try connection.query("INSERT INTO c VALUES (1)")
            for queued in [false, true] {
                try connection.run("BEGIN")
                try connection.query("INSERT INTO c VALUES ($1)", [.integer(2)])
                // A failure someone looked past (a `try?` read): the transaction is aborted.
                _ = try? connection.query("INSERT INTO c VALUES ($1)", [.integer(1)])
                if queued { connection.later("SELECT 1") }
                let error = #expect(throws: PostgresError.self) { try connection.run("COMMIT") }
                #expect(error?.isRetryable == true, "queued: \(queued)")
                try connection.run("ROLLBACK")  // what a store does after any error
                let rows = try connection.query("SELECT n FROM c ORDER BY n")
                #expect((0..<rows.count).map { rows.int($0, 0) } == [1], "nothing of the rolled-back transaction is kept")
            }
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
