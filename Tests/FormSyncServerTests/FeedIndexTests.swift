import FormSyncSQLite
import Foundation
import Testing

@testable import FormSyncServer

/// The embedded store's feed reads its index alone for each change: a page looks up only the
/// records it sends, and the count of what remains looks up nothing.
struct FeedIndexTests {
    static func plan(_ query: (sql: String, values: [SQLValue])) throws -> [String] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("feed-index-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = try SQLiteConnection(path: folder.appendingPathComponent("server.sqlite").path)
        try SQLiteServerSchema.migrations.migrate(db, now: 0)
        return try db.query("EXPLAIN QUERY PLAN " + query.sql, query.values) { $0.text(3) ?? "" }
    }

    @Test func aDevicesFeedPageAndItsCountReadTheFeedIndexAloneForEachChange() throws {
        for selection in [FeedSelection.all, .excluding(["Customer"])] {
            let page = try Self.plan(
                SQLiteRecords.feedQuery(workspace: "acme", principal: "ada", selection: selection, after: 10, limit: 1000))
            #expect(page.contains { $0.contains("SEARCH c USING COVERING INDEX changes_feed") }, "\(page)")
            #expect(page.contains { $0.contains("SEARCH r USING PRIMARY KEY") }, "\(page)")
            let count = try Self.plan(
                SQLiteRecords.remainingQuery(workspace: "acme", principal: "ada", selection: selection, after: 10, cap: 100_000))
            #expect(count.contains { $0.contains("COVERING INDEX changes_feed") }, "\(count)")
            #expect(!count.contains { $0.contains(" r ") }, "\(count)")
        }
    }

    @Test func theBackOfficesFeedPageReadsTheFeedIndexForEachChange() throws {
        let page = try Self.plan(SQLiteRecords.feedQuery(workspace: "acme", principal: nil, selection: .all, after: 0, limit: 1000))
        #expect(page.contains { $0.contains("SEARCH c USING COVERING INDEX changes_feed") }, "\(page)")
    }
}
