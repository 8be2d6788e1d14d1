import FormSyncSQLite
import Foundation
import Testing

/// The small SQLite layer under the outbox and the server: its statement cache never carries
/// one run's values into the next, and it keeps SQLite's allocations off a process-wide lock.
struct SQLiteConnectionTests {
    /// Runs `body` with a new database in a folder of its own, removed afterwards.
    func withDatabase(_ body: (SQLiteConnection) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try body(SQLiteConnection(path: folder.appendingPathComponent("db.sqlite").path))
    }

    @Test func sqliteKeepsNoMemoryStatisticsOnceAConnectionOpened() throws {
        try withDatabase { db in
            try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)")
            try db.run("INSERT INTO t (id, a) VALUES (?, ?)", [.integer(1), .text(String(repeating: "x", count: 10_000))])
            #expect(!SQLiteConnection.keepsMemoryStatistics)
        }
    }

    @Test func aCachedStatementRunWithFewerValuesBindsNullNotTheLastRunsValues() throws {
        try withDatabase { db in
            try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b BLOB)")
            let insert = "INSERT INTO t (id, a, b) VALUES (?, ?, ?)"
            try db.run(insert, [.integer(1), .text("kept"), .blob(Data([1, 2]))])
            try db.run(insert, [.integer(2)])
            try db.run(insert, [.integer(3), .text("again"), .blob(Data([3]))])
            let rows = try db.query("SELECT id, a, b FROM t ORDER BY id") { ($0.int(0), $0.text(1), $0.blob(2)) }
            #expect(rows.map(\.0) == [1, 2, 3])
            #expect(rows.map(\.1) == ["kept", nil, "again"])
            #expect(rows.map(\.2) == [Data([1, 2]), nil, Data([3])])
        }
    }

    @Test func declaredStatementsWithTheSameTextAreEachTheirOwnAndBindNullForOmittedValues() throws {
        try withDatabase { db in
            try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)")
            let insert = SQLiteConnection.Statement("INSERT INTO t (id, a) VALUES (?, ?)")
            let twin = SQLiteConnection.Statement("INSERT INTO t (id, a) VALUES (?, ?)")
            let read = SQLiteConnection.Statement("SELECT a FROM t WHERE id = ?")
            try db.run(insert, [.integer(1), .text("first")])
            try db.run(twin, [.integer(2), .text("twin")])
            try db.run(insert, [.integer(3)])
            #expect(try db.query(read, [.integer(1)]) { $0.text(0) } == ["first"])
            #expect(try db.query(read, [.integer(2)]) { $0.text(0) } == ["twin"])
            #expect(try db.query(read, [.integer(3)]) { $0.text(0) } == [nil])
            // A failed run leaves the statement reset: the next run of it works.
            #expect(throws: SQLiteError.self) { try db.run(insert, [.integer(1), .text("duplicate")]) }
            try db.run(insert, [.integer(4), .text("after")])
            #expect(try db.query(read, [.integer(4)]) { $0.text(0) } == ["after"])
        }
    }
}
