import FieldForms
import FormSyncClient
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A device whose disk fills up during a pull, run as its own process (the limit is the
/// process's largest file size, RLIMIT_FSIZE, so nothing else on the machine is touched): the
/// pull must fail with a clear error and leave the store as it was after its last whole page;
/// once there is room again, the next pull catches up.
package struct DiskFullDevice {
    package var database: String
    package var server: URL
    package var refreshToken: String
    /// How many bytes the database files may still grow by before the disk is "full".
    package var headroom: Int

    package init(database: String, server: URL, refreshToken: String, headroom: Int) {
        self.database = database
        self.server = server
        self.refreshToken = refreshToken
        self.headroom = headroom
    }

    package func run() async throws -> Int32 {
        let outbox = try TortureDevice.openOutbox(database: database, servers: [server], refreshToken: refreshToken)
        let sizes = [database, database + "-wal"].map { (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0 }
        signal(SIGXFSZ, SIG_IGN)
        try setFileSizeLimit(UInt64(sizes.max()! + headroom))
        print("disk full after \(headroom) more bytes")
        do {
            let report = try await outbox.pull(pageSize: 50)
            print(report.caughtUp ? "pull finished despite the full disk" : "pull stopped: \(String(describing: report.stoppedBecause))")
        } catch {
            print("pull failed: \(error)")
        }
        print("stored after the failure: \(try await outbox.storedRecordCount())")
        try setFileSizeLimit(nil)
        for _ in 0..<20 {
            let report = try await outbox.pull(pageSize: 200)
            if report.caughtUp {
                print("caught up: \(try await outbox.storedRecordCount()) records")
                return 0
            }
        }
        return 1
    }

    private func setFileSizeLimit(_ bytes: UInt64?) throws {
        var limit = rlimit()
        #if canImport(Darwin)
            let resource = RLIMIT_FSIZE
        #elseif canImport(Glibc)
            let resource = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
        #elseif canImport(Musl)
            let resource = RLIMIT_FSIZE
        #endif
        guard getrlimit(resource, &limit) == 0 else { throw TortureError("getrlimit: \(String(cString: strerror(errno)))") }
        limit.rlim_cur = bytes.map { rlim_t($0) } ?? limit.rlim_max
        guard setrlimit(resource, &limit) == 0 else { throw TortureError("setrlimit: \(String(cString: strerror(errno)))") }
    }
}
