import FormSyncTesting
import Foundation
import Testing

/// The cluster torture, short: three `formsync serve --database` nodes on one PostgreSQL, the
/// device's requests spread over them, nodes killed and restarted, PostgreSQL restarted once.
struct ClusterTortureTests {
    @Test func nodesAndTheDatabaseKilledUnderADeviceLoseNothingAndApplyNothingTwice() async throws {
        let binary = DemoProcessTests.lab
        try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build the lab first (swift build)")
        let run = try await ProcessRunner.run(binary, ["torture", "cluster", "--node-kills", "30", "--seed", "20261203"])
        #expect(run.status == 0, "\(run.output)\n\(run.errors.suffix(6000))")
        #expect(!run.output.contains("FAILED"), "\(run.output)")
        let cluster = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("cluster: ") })
        #expect(cluster.contains("30 node kills, 1 PostgreSQL restart(s)"), "\(cluster)")
        // What was checked is not empty: documents, files, lanes, edits, and the feed.
        let server = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("server: ") })
        let numbers = server.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        #expect(numbers.count >= 4 && numbers.allSatisfy { $0 > 0 }, "\(server)")
        let feed = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("feed: ") })
        #expect(feed.contains("every one numbered"), "\(feed)")
    }

    /// PostgreSQL restarted early, with little traffic after it to reset the connections that
    /// died with it: the back office's first reads after the restart met dead pooled
    /// connections, and the check found the server "empty".
    @Test func aRestartOfPostgreSQLEarlyInTheRunLosesNothingEither() async throws {
        let binary = DemoProcessTests.lab
        try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build the lab first (swift build)")
        let run = try await ProcessRunner.run(binary, ["torture", "cluster", "--node-kills", "6", "--seed", "1"])
        #expect(run.status == 0, "\(run.output)\n\(run.errors.suffix(6000))")
        #expect(run.output.contains("6 node kills, 1 PostgreSQL restart(s)"), "\(run.output)")
        #expect(!run.output.contains("FAILED"), "\(run.output)")
    }
}

/// A machine without PostgreSQL is told how to install it, in one line; nothing is skipped.
struct PostgresMissingTests {
    @Test func withoutPostgreSQLTheClusterCommandSaysHowToInstallIt() async throws {
        let run = try await ChildProcess.run(
            DemoProcessTests.lab.path, ["torture", "cluster", "--node-kills", "1"], environment: ["FORMSYNC_PG_BIN": "/nonexistent"])
        #expect(run.termination == .exit(1))
        let lines = run.errors.split(separator: "\n").filter { $0.contains("apt-get install postgresql libpq-dev") }
        #expect(lines.count == 1, "\(run.errors)")
    }
}
