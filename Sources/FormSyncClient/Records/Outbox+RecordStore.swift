import FormSyncModel

/// The record store's reads, from the outbox: the same calls as on `recordStore`, for apps
/// that hold only the outbox.
extension Outbox {
    /// The records of `R` the query selects, as the device shows them (`RecordStore.records`).
    public nonisolated func records<R: SyncRecord>(_ query: RecordQuery<R>) async throws -> [R] {
        try await recordStore.records(query)
    }

    /// One record as the device shows it (`RecordStore.record`).
    public nonisolated func record<R: SyncRecord>(_ type: R.Type, id: Int64) async throws -> R? {
        try await recordStore.record(type, id: id)
    }

    /// The server id a placeholder landed as (`RecordStore.serverID(forPlaceholder:)`).
    public nonisolated func serverID(forPlaceholder placeholder: Int64) async throws -> Int64? {
        try await recordStore.serverID(forPlaceholder: placeholder)
    }

    /// How many records the device holds for the current workspace (`RecordStore.storedRecordCount`).
    public nonisolated func storedRecordCount() async throws -> Int {
        try await recordStore.storedRecordCount()
    }

    /// Forgets the current workspace's pulled records and cursor (`RecordStore.forgetPulledRecords`).
    public nonisolated func forgetPulledRecords() async throws {
        try await recordStore.forgetPulledRecords()
    }

    /// Notices of which records changed (`RecordStore.recordChanges`).
    public nonisolated func recordChanges() async -> AsyncStream<RecordsChanged> {
        await recordStore.recordChanges()
    }
}
