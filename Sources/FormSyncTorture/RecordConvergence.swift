import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import Foundation

/// Whether a device's pulled records equal what the server holds for it (the courier's
/// deliveries, every customer and every finding, and the jobs of the region it subscribes to),
/// as both harnesses check at the end.
enum RecordConvergence {
    /// One problem per record type that differs, and how many records the device holds.
    static func check(
        server records: [SyncServer.Record], outbox: Outbox, courier: String, jobRegion: Job.Region? = nil
    ) async throws -> (problems: [String], records: Int) {
        func expected<R: SyncRecord>(_ type: R.Type, where include: (SyncServer.Record) -> Bool) throws -> [Int64: R] {
            Dictionary(
                uniqueKeysWithValues: try records.filter { $0.type == R.recordType && include($0) }.map { record in
                    (record.id, try RecordProjection.decode(R.self, fields: record.fields, id: record.id, version: record.version))
                })
        }
        func compare<R: SyncRecord>(_ want: [Int64: R]) async throws -> (String?, Int) {
            let have = try await outbox.records(R.all)
            let wrong = have.filter { want[$0.id] != $0 }.map(\.id)
            guard have.count != want.count || !wrong.isEmpty else { return (nil, have.count) }
            return (
                "the device's \(have.count) \(R.recordType) records differ from the server's \(want.count) (\(wrong.prefix(8)))", have.count
            )
        }
        let (deliveries, deliveryCount) = try await compare(try expected(Delivery.self) { $0.scope == courier })
        let (customers, customerCount) = try await compare(try expected(Customer.self) { _ in true })
        let (findings, findingCount) = try await compare(try expected(Finding.self) { _ in true })
        let (jobs, jobCount) = try await compare(
            try expected(Job.self) { record in
                jobRegion != nil && (try? JSONDecoder().decode(Job.self, from: record.fields))?.region == jobRegion
            })
        return ([deliveries, customers, findings, jobs].compactMap { $0 }, deliveryCount + customerCount + findingCount + jobCount)
    }
}
