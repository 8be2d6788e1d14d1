import FormSyncModel
import FormSyncPostgres
import FormSyncServer
import Foundation
import Synchronization

/// Which store the server tests run on: the embedded SQLite store, or PostgreSQL when
/// `FORMSYNC_TEST_STORE=postgres` (the README's test command runs the end-to-end suites both
/// ways). A PostgreSQL run starts its own throwaway cluster and gives each server a database
/// of its own; a machine without PostgreSQL fails with the line that says how to install it.
package enum TestStore {
    package static var isPostgres: Bool { ProcessInfo.processInfo.environment["FORMSYNC_TEST_STORE"] == "postgres" }

    /// A reference server on the store this run tests, its SQLite files (or nothing) in `directory`.
    package static func server(
        directory: String, forms: [any FormPayload.Type], records: [any SyncRecord.Type] = [], tokenLifetimeSeconds: Int = 3600,
        workspace: String? = nil,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) throws -> SyncServer {
        guard isPostgres else {
            return try SyncServer(
                directory: directory, forms: forms, records: records, tokenLifetimeSeconds: tokenLifetimeSeconds, workspace: workspace,
                now: now)
        }
        // The same folder is the same database: a test that reopens its server reopens it.
        let url = try databases.withLock { known in
            if let url = known[directory] { return url }
            let url = try PostgresCluster.shared().makeDatabase()
            known[directory] = url
            return url
        }
        return try postgresServer(
            url: url, forms: forms, records: records, tokenLifetimeSeconds: tokenLifetimeSeconds, workspace: workspace, now: now)
    }

    private static let databases = Mutex<[String: String]>([:])

    /// A server node on the PostgreSQL database at `url` (migrated by the first node).
    package static func postgresServer(
        url: String, forms: [any FormPayload.Type], records: [any SyncRecord.Type] = [], tokenLifetimeSeconds: Int = 3600,
        workspace: String? = nil,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) throws -> SyncServer {
        let store = try PostgresServerStore(url: url, migrate: true, now: now())
        return try SyncServer(
            store: store, registry: FormRegistry(forms), records: RecordRegistry(records), tokenLifetimeSeconds: tokenLifetimeSeconds,
            workspace: workspace, now: now)
    }
}
