import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncHTTP
import FormSyncModel
import FormSyncPostgres
import FormSyncProtocol
import FormSyncServer
import FormSyncTorture
import Foundation
import Synchronization

/// `formsync-lab bench server --database URL --nodes 1,2,4`: durable writes per second on the
/// PostgreSQL store with 1, 2 or 4 server nodes sharing one database, against the embedded
/// SQLite store on the same machine, rounds interleaved, a fresh database each; then the rate at
/// which a device pulls records from the change feed on each store. Nodes run in this process
/// (each its own `SyncServer`, HTTP server and connection pool, as a `formsync serve` process
/// would have); the clients are the SQLite benchmark's keep-alive sockets, spread over the nodes.
enum ClusterBenchmark {
    /// Where the benchmark's databases live: a PostgreSQL server it may create databases on.
    final class Databases {
        private let cluster: PostgresCluster?
        private let admin: String
        private var made: [String] = []

        init(url: String?) throws {
            if let url {
                cluster = nil
                admin = url
            } else {
                cluster = try PostgresCluster()
                admin = cluster!.url()
            }
        }

        /// A new empty database, dropped at the end.
        func make() throws -> String {
            let name = "formsync_bench_\(UUID().uuidString.prefix(8).lowercased())"
            try PostgresConnection(url: admin).run("CREATE DATABASE \(name)")
            made.append(name)
            guard var components = URLComponents(string: admin) else { throw BenchmarkFailure(message: "--database is not a URL") }
            components.path = "/" + name
            return components.string ?? admin
        }

        func dropAll() {
            if let connection = try? PostgresConnection(url: admin) {
                for name in made { _ = try? connection.run("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
            }
            cluster?.destroy()
        }
    }

    static func run(
        items: Int, concurrency: Int, rounds: Int, workers: Int, database: String?, nodes: [Int], pullRecords: Int
    ) throws -> Int32 {
        let databases = try Databases(url: database)
        defer { databases.dropAll() }
        print(
            "server benchmark, PostgreSQL\(database == nil ? " (a throwaway cluster on this machine, fsync on)" : ""): \(items) SalesOrder submissions per round from \(concurrency) keep-alive connections, \(workers) handler threads per node, nodes \(nodes.map(String.init).joined(separator: ",")), \(rounds) interleaved rounds"
        )
        var sqlite: [Double] = []
        var postgres: [Int: [Double]] = [:]
        for round in 0..<rounds {
            // The order of the configurations turns each round, so that no one always runs first.
            var order: [Int?] = [nil] + nodes.map { Optional($0) }
            order = Array(order[(round % order.count)...] + order[..<(round % order.count)])
            for configuration in order {
                if let count = configuration {
                    postgres[count, default: []].append(
                        try measure(items: items, concurrency: concurrency, workers: workers, nodes: count, database: databases.make()))
                } else {
                    sqlite.append(
                        try ServerBenchmark.measure(
                            items: items, concurrency: concurrency, workers: workers, identities: .live, groupCommit: true
                        ).rate)
                }
            }
        }
        func spread(_ v: [Double]) -> String { String(format: "%.0f/s (%.0f–%.0f)", BenchCommand.median(v), v.min()!, v.max()!) }
        print("  SQLite store, one process (group commit):  \(spread(sqlite))")
        for count in nodes {
            let rates = postgres[count] ?? []
            print(
                "  PostgreSQL store, \(count) node\(count == 1 ? " " : "s"):           \(spread(rates))  \(String(format: "%.2f×", BenchCommand.median(rates) / BenchCommand.median(sqlite))) SQLite"
            )
        }
        if pullRecords > 0 {
            var pullSQLite: [Double] = []
            var pullPostgres: [Double] = []
            for round in 0..<rounds {
                for onPostgres in round % 2 == 0 ? [false, true] : [true, false] {
                    let rate = try pull(records: pullRecords, database: onPostgres ? databases.make() : nil)
                    if onPostgres { pullPostgres.append(rate) } else { pullSQLite.append(rate) }
                }
            }
            print(
                "  pull of \(pullRecords) records from the change feed, pages of \(SyncServer.maxChangesPerPage) (the handler, no sockets):"
            )
            print("    SQLite store:     \(spread(pullSQLite)) records")
            print(
                "    PostgreSQL store: \(spread(pullPostgres)) records  \(String(format: "%.2f×", BenchCommand.median(pullPostgres) / BenchCommand.median(pullSQLite)))"
            )
        }
        return 0
    }

    /// Durable submissions per second through `nodes` nodes on one fresh database.
    static func measure(items: Int, concurrency: Int, workers: Int, nodes count: Int, database: String) throws -> Double {
        let servers = try (0..<count).map { _ in
            let server = try SyncServer(
                store: try PostgresServerStore(url: database, migrate: true, now: Int64(Date().timeIntervalSince1970 * 1000)),
                registry: FormRegistry(FormCatalog.forms),
                records: RecordRegistry(FormCatalog.records))
            server.workers = workers
            return server
        }
        let ports = try servers.map { try $0.start() }
        defer { for server in servers { server.stop() } }
        let token = try servers[0].issueAccessToken(workspaces: ["bench"])
        let live = OutboxEnvironment.live
        let requests = try HTTPBenchmark.salesOrderRequests(items, server: servers[0], token: token, identity: { live.newID() }).map(
            ServerBenchmark.serialise)
        let seconds = try ServerBenchmark.drive(requests, ports: ports, concurrency: concurrency)
        return Double(items) / seconds
    }

    /// Records per second a device's pull reads from the feed, pages of 1,000, on the SQLite
    /// store (`database` nil) or PostgreSQL.
    static func pull(records: Int, database: String?) throws -> Double {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-bench-pull-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server: SyncServer
        if let database {
            server = try SyncServer(
                store: try PostgresServerStore(url: database, migrate: true, now: Int64(Date().timeIntervalSince1970 * 1000)),
                registry: FormRegistry(FormCatalog.forms),
                records: RecordRegistry(FormCatalog.records))
        } else {
            server = try SyncServer(directory: folder.path, forms: FormCatalog.forms, records: FormCatalog.records)
        }
        defer { server.stop() }
        var seeds: [SyncServer.RecordSeed] = []
        for n in 0..<records {
            seeds.append(
                SyncServer.RecordSeed(
                    type: "Customer", fields: try FormRegistry.encode(Customer(name: "Shop \(n)", segment: .retail)), workspace: "bench"))
            if seeds.count == 2000 {
                try server.putRecords(seeds)
                seeds = []
            }
        }
        if !seeds.isEmpty { try server.putRecords(seeds) }
        let token = try server.issueAccessToken(workspaces: ["bench"])
        let start = DispatchTime.now().uptimeNanoseconds
        var cursor = ""
        var read = 0
        while true {
            let query = "limit=\(SyncServer.maxChangesPerPage)" + (cursor.isEmpty ? "" : "&cursor=\(cursor)")
            guard
                let page = server.handle(
                    HTTPRequest(
                        method: "GET", path: "/changes", query: query,
                        headers: ["authorization": "Bearer \(token)", ProtocolHeader.workspace.lowercased(): "bench"], body: Data())),
                page.status == 200, let object = try JSONSerialization.jsonObject(with: page.body) as? [String: Any]
            else { throw BenchmarkFailure(message: "a feed page failed") }
            read += (object[FeedPage.changes] as? [Any])?.count ?? 0
            cursor = object[FeedPage.cursor] as? String ?? ""
            if object[FeedPage.more] as? Bool != true { break }
        }
        guard read == records else { throw BenchmarkFailure(message: "the feed returned \(read) of \(records) records") }
        return Double(records) / OutboxBenchmark.seconds(since: start)
    }
}
