import FormSyncModel
import FormSyncProtocol

/// The record store's reads, from the outbox (the same calls as on `recordStore`, for apps
/// that hold only the outbox), and the pull, which is traffic: it goes through the outbox's
/// transport and network state and writes through the record store.
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

    /// Fetches the change feed page by page until the device has caught up, for the current
    /// workspace. Each page and the cursor after it commit in one transaction, so a process
    /// killed mid-pull resumes where the last committed page ended: no change is skipped or
    /// applied twice, and applying one again is harmless (a record older than the stored one
    /// is ignored). Concurrent calls share one pull. Sending is never held up: the outbox
    /// keeps flushing while a pull waits on the network.
    ///
    /// A pull is bounded (`limits`): a server that keeps saying "more" stops it after so many
    /// pages, bytes or seconds, with what was committed kept and the reason in the report; the
    /// next pull goes on from there.
    ///
    /// On a shared phone the pull is the current person's (their token, their records, their
    /// cursor); with nobody signed in it pulls nothing. A page that carries the back office's
    /// support request is answered at once (`sendSupportBundle`), and a review of a document this
    /// device sent is acted on (`reviews(of:)`: one that has issues reopens its item).
    ///
    /// Returns what was pulled; `stoppedBecause` says why it ended before catching up (no
    /// network, an expired token, a server error, a bound). Throws only when the database
    /// refuses.
    ///
    /// `wait`: when the device is caught up, the server may hold the first page up to this long
    /// (less a margin under the transport's timeout), answering as soon as a change this person
    /// may see commits: a new job in seconds, not at the next poll. For a server that says
    /// `wait-for-changes` (`serverWaitsForChanges()`); one that does not answers at once.
    ///
    /// `pageSize`: the most changes a page after the first asks for (the first asks for at most
    /// 1,000, so that the first records show at once), up to 10,000: a server of compact pages
    /// serves that many (fewer past 8 MiB of records), one that answers JSON up to 1,000. The
    /// default, 5,000, pulls as fast as 10,000 here with a quarter less memory.
    public func pull(
        pageSize: Int = 5_000, limits: PullLimits = PullLimits(), wait: Duration = .zero
    ) async throws -> PullReport {
        // A revoked device pulls nothing more (its pulled records may just have been purged),
        // and a shared phone with nobody signed in has nobody to pull for.
        if lifecycle.revocationReason != nil { return PullReport() }
        if lifecycle.principal == nil, lifecycle.peopleKnown { return PullReport() }
        let context = PullContext(
            transport: transport, refreshAuthentication: refreshAuthentication, maxAuthRefreshes: configuration.maxAuthRefreshesPerFlush,
            now: environment.now, observers: observers,
            networkDown: { [weak self] reason in await self?.setNetworkDown(true, reason: reason) })
        var report = try await recordStore.pull(
            pageSize: max(1, min(pageSize, CompactFeedPage.maxChanges)), limits: limits, context: context, wait: wait)
        // The reviews the pull kept with its pages: a document sent back is reopened now.
        try applyWaitingReviews()
        // An unsent edit of a record the server deleted would only fail: a person settles it.
        if report.deleted > 0 {
            let now = environment.now()
            if try write(.full, { try lifecycle.parkEditsOfDeletedRecords(now: now) }) > 0 { emitSnapshot(changed: nil) }
        }
        // The back office asked this device for its support bundle: answered now, as part of
        // this sync (a request not answered comes again with the next pull).
        if let request = report.supportRequest {
            if case .done = await sendSupportBundle(answering: request.id) {
                observers.emit(.supportBundleSent(request: request.id))
            } else {
                report.supportRequest = request
            }
        }
        return report
    }

    /// Whether the server holds a pull until something changes (`wait-for-changes` in its
    /// `GET /health`); nil when no FormSync server answers now.
    public func serverWaitsForChanges() async -> Bool? {
        await transport.serverFeatures().map { $0.contains(Feature.waitForChanges.rawValue) }
    }
}
