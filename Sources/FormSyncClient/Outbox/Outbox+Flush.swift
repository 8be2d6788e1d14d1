import Foundation
import FormSyncModel

extension Outbox {
    // MARK: Flush

    /// Sends everything of the current workspace that is due, up to `concurrency` lanes at once,
    /// until nothing more is due now. Concurrent callers share a pass, but a call always gets a
    /// pass that started after it was made, so an item enqueued before `flush()` is considered.
    ///
    /// The pass stops leasing at the first "no server answered" (`FlushReport.offline`): an
    /// outage is not the items' fault and is not counted against them. Cancelling the calling
    /// task (when no other caller still waits for the pass) stops new attempts at once and
    /// cancels the requests on the wire; their items go back to pending with the same key.
    public func flush() async -> FlushReport {
        flushRequests += 1
        let ticket = flushRequests
        while !Task.isCancelled {
            if let running = pass {
                let result = await wait(for: running.id, task: running.task)
                if running.ticket >= ticket || Task.isCancelled { return result }
                continue
            }
            passCount += 1
            let id = passCount
            let task = Task { await self.runPass(id) }
            pass = (id, flushRequests, task)
            return await wait(for: id, task: task)
        }
        var cancelled = FlushReport()
        cancelled.remaining = remainingCount()
        return cancelled
    }

    private func wait(for id: Int, task: Task<FlushReport, Never>) async -> FlushReport {
        passWaiters[id, default: 0] += 1
        return await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            Task { await self.leavePass(id, task: task) }
        }
    }

    private func leavePass(_ id: Int, task: Task<FlushReport, Never>) {
        guard let waiting = passWaiters[id] else { return }  // the pass is over
        passWaiters[id] = waiting - 1
        if waiting <= 1 { task.cancel() }
    }

    private func runPass(_ id: Int) async -> FlushReport {
        let result = await runFlush()
        passWaiters[id] = nil
        if pass?.id == id { pass = nil }
        return result
    }

    func remainingCount() -> Int {
        let open = counts[workspace] ?? [:]
        return (open[.pending] ?? 0) + (open[.leased] ?? 0)
    }

    func runFlush() async -> FlushReport {
        report = FlushReport()
        retryingThisFlush = []
        var paused = false
        var refreshes = 0
        let transport = self.transport
        let hub = observers
        let clock = environment.now
        // Answers land in the inbox as they come; the loop takes all that arrived at once and
        // records them in one transaction.
        let inbox = FlushInbox()
        let executor = database.taskExecutor
        await withDiscardingTaskGroup { group in
            var running = 0
            var uploads = 0
            var leases: [Lease] = []
            func launch(_ leases: [Lease]) {
                for lease in leases {
                    running += 1
                    if lease.request.isFileUpload { uploads += 1 }
                    hub.emit(.attemptStarted(item: ItemID(lease.itemID), kind: lease.request.isFileUpload ? .file : .submission, form: lease.request.form, attempt: lease.attempt))
                    group.addTask(executorPreference: executor) {
                        CrashPoint.leased.reach()
                        let started = clock()
                        let item = ItemID(lease.itemID)
                        let (outcome, details) = await transport.deliver(lease.request) { sent, total in
                            hub.emit(.uploadProgress(item: item, sent: sent, total: total))
                        }
                        if case .done = outcome { CrashPoint.delivered.reach() }
                        let arrival = Arrival(lease: lease, outcome: outcome, details: details, milliseconds: max(0, clock() - started))
                        inbox.put(arrival)
                    }
                }
            }
            while true {
                rescanRequested = false
                // The leases taken with the last answers go out first; then whatever is due
                // fills the slots still free.
                launch(leases)
                leases = []
                if !paused && !report.offline && !Task.isCancelled {
                    // Submissions and uploads fill pools of their own: a form never waits
                    // behind another item's video.
                    launch(nextLeases(
                        transport: transport, submissions: configuration.concurrency - (running - uploads),
                        uploads: configuration.uploadConcurrency - uploads))
                }
                if running == 0 {
                    if paused && !report.offline && !Task.isCancelled {
                        refreshes += 1
                        if refreshes <= configuration.maxAuthRefreshesPerFlush, await refreshAuthentication() {
                            paused = false
                            continue
                        }
                        report.authenticationRequired = true
                        break
                    }
                    if rescanRequested && !report.offline && !Task.isCancelled { continue }
                    break
                }
                let arrived = await inbox.takeAll()
                running -= arrived.count
                uploads -= arrived.filter { $0.lease.request.isFileUpload }.count
                if arrived.contains(where: { if case .authExpired = $0.outcome { return true } else { return false } }) { paused = true }
                // The answers are recorded and the slots they freed leased again in one
                // transaction (one commit per turn of the loop instead of two).
                let refill = paused || Task.isCancelled || transport.workspace != workspace
                    ? nil : (submissions: configuration.concurrency - (running - uploads), uploads: configuration.uploadConcurrency - uploads)
                leases = handle(arrived, cancelled: Task.isCancelled, refill: refill)
            }
        }
        var result = report
        result.remaining = remainingCount()
        result.retrying = retryingThisFlush.count
        return result
    }


    /// When anything of the current workspace is next due, by the outbox's clock, nil when
    /// nothing is; a due time the clock has passed, or one absurdly far ahead, is now.
    public func nextDueTime() -> Date? {
        nextDueMilliseconds().map { Date(millisecondsSince1970: $0) }
    }

    /// `nextDueTime` in milliseconds since 1970 (the engine's and the simulation's unit).
    package func nextDueMilliseconds() -> Int64? {
        guard let due = try? store.earliestDue(workspace: workspace) else { return nil }
        let now = environment.now()
        return due <= now || due > now.addingClamped(configuration.horizonMilliseconds) ? now : due
    }

    /// Whether items of the current workspace are still to go out without a person acting
    /// (queued, retrying later, or on the wire).
    public func hasWorkToSend() -> Bool {
        let stored = counts[workspace] ?? [:]
        return (stored[.pending] ?? 0) + (stored[.leased] ?? 0) > 0
    }

    /// Whether the last attempt found no server (pending items show as waiting for network).
    public var isWaitingForNetwork: Bool { networkDown }

    /// Asks the current workspace's server whether it answers now; a success ends "waiting for
    /// network". The engine calls this before it resumes after an outage.
    public func probe() async -> Bool {
        let transport = self.transport
        let reachable = await transport.probe()
        if reachable && transport.workspace == workspace { setNetworkDown(false) }
        return reachable
    }

    func setNetworkDown(_ down: Bool, reason: String = "no server answered") {
        guard networkDown != down else { return }
        networkDown = down
        observers.emit(down ? .offline(reason: reason) : .online)
        emitSnapshot(changed: nil)
    }

    /// Leases due lane heads, up to `submissions` of submission lanes and `uploads` of file
    /// lanes, in one transaction (none when nothing is due now).
    func nextLeases(transport: any OutboxTransport, submissions: Int, uploads: Int) -> [Lease] {
        guard transport.workspace == workspace else { return [] }
        let now = environment.now()
        // Nothing due (the usual answer for the upload pool): no transaction.
        guard (try? anyDue(submissions: submissions, uploads: uploads, now: now)) == true else { return [] }
        guard let leases = try? write(.normal, { try leaseDue(submissions: submissions, uploads: uploads, now: now) }) else { return [] }
        markSent(leases)
        return leases
    }

    /// Whether a pool with free slots has a due lane head that is not on its way already.
    func anyDue(submissions: Int, uploads: Int, now: Int64) throws -> Bool {
        for (files, count) in [(false, submissions), (true, uploads)] where count > 0 {
            if try !dueHeads(files: files, count: count, skipping: [], now: now).isEmpty { return true }
        }
        return false
    }

    /// Up to `count` due lane heads of one pool, leaving out those in flight, retrying in this
    /// flush, or in `skipping`.
    func dueHeads(files: Bool, count: Int, skipping: Set<Int64>, now: Int64) throws -> [(lane: String, head: Int64)] {
        let skip = inFlight.count + retryingThisFlush.count + skipping.count
        let candidates = try store.dueLanes(
            workspace: workspace, now: now, horizon: configuration.horizonMilliseconds, limit: skip + count, files: files)
        return Array(candidates.filter { !inFlight.contains($0.head) && !retryingThisFlush.contains($0.head) && !skipping.contains($0.head) }.prefix(count))
    }

    /// Leases due lane heads inside the caller's transaction (`nextLeases`, or `handle` when it
    /// refills the slots its answers freed); `markSent` once that transaction committed.
    func leaseDue(submissions: Int, uploads: Int, now: Int64) throws -> [Lease] {
        var leases: [Lease] = []
        var tried: Set<Int64> = []
        // A head that cannot be leased (parked on the way, say) is skipped; a few rounds of
        // lookups fill the slots it left.
        for _ in 0..<8 {
            let leasedFiles = leases.filter { $0.request.isFileUpload }.count
            let wanted = [(false, submissions - (leases.count - leasedFiles)), (true, uploads - leasedFiles)].filter { $0.1 > 0 }
            guard !wanted.isEmpty else { break }
            var picks: [(lane: String, head: Int64)] = []
            for (files, count) in wanted { picks += try dueHeads(files: files, count: count, skipping: tried, now: now) }
            guard !picks.isEmpty else { break }
            picks.sort { $0.head < $1.head }  // the two pools' heads go out in the order they were queued
            tried.formUnion(picks.map(\.head))
            let got = try picks.compactMap { try lease($0.head, lane: $0.lane, now: now) }
            leases += got
            if got.count == picks.count { break }
        }
        return leases
    }

    /// After the leases' transaction committed: they are in flight, and shown as sent.
    func markSent(_ leases: [Lease]) {
        for lease in leases {
            inFlight.insert(lease.itemID)
            emit(OutboxItemChange(id: ItemID(lease.itemID), state: .sent))
        }
    }

    /// Leases one lane head inside the caller's transaction; nil when it cannot go now (it was
    /// taken or parked meanwhile, or it was just parked because it cannot be sent at all).
    func lease(_ id: Int64, lane: String, now: Int64) throws -> Lease? {
        guard var row = try store.item(id), row.workspace == workspace,
            row.state == .pending || (row.state == .leased && leaseExpired(row.leaseExpiresAt, now: now))
        else {
            try store.refreshLane(workspace: workspace, lane: lane)
            return nil
        }
        let body: OutboundRequest.Body
        switch row.kind {
        case .file:
            guard let path = row.filePath, let sha = row.sha256, FileManager.default.isReadableFile(atPath: path) else {
                try park(&row, as: .rejected, reason: "the stashed copy of the file is missing", fieldErrors: [], now: now)
                return nil
            }
            body = .file(path: path, contentType: row.contentType, byteCount: row.byteCount ?? 0, sha256: sha)
        case .submission:
            guard let name = row.form, let entry = registry[name], row.payload != nil else {
                try park(&row, as: .rejected, reason: "form \(row.form ?? "?") is not registered with this outbox", fieldErrors: [], now: now)
                return nil
            }
            if let stored = row.formVersion, stored != entry.version {
                guard try upgrade(&row, entry: entry, from: stored, now: now) else { return nil }
            }
            guard let payload = row.payload else { return nil }
            // A storage error reaches the caller; only a payload that no longer decodes parks.
            let resolved = row.endpoint == nil ? try store.resolvedDependencies(of: row.id, workspace: row.workspace) : [:]
            do {
                let version = row.formVersion ?? entry.version
                if let endpoint = row.endpoint {
                    body = .submission(form: name, version: version, endpoint: endpoint, payload: payload, baseVersion: row.baseVersion)
                } else {
                    let remapped = try entry.remap(payload, resolved)
                    body = .submission(form: name, version: version, endpoint: remapped.endpoint, payload: remapped.payload, baseVersion: row.baseVersion)
                }
            } catch {
                try park(&row, as: .rejected, reason: "the stored payload no longer decodes as \(name): \(error)", fieldErrors: [], now: now)
                return nil
            }
        }
        try move(&row, to: .leased)
        row.leaseExpiresAt = now.addingClamped(configuration.leaseMilliseconds)
        row.sends += 1
        // Only the lease columns change (an upgrade above wrote its own), and the head stays
        // the head: its lane is due when the lease expires.
        try store.markLeased(row.id, until: row.leaseExpiresAt!, sends: row.sends, now: now)
        if try !store.setLaneDue(workspace: row.workspace, lane: row.lane, head: row.id, due: row.leaseExpiresAt!) {
            try store.refreshLane(workspace: row.workspace, lane: row.lane)
        }
        return Lease(
            itemID: row.id, attemptID: row.attemptID, attempt: row.attempts + 1,
            request: OutboundRequest(itemID: ItemID(row.id), documentID: row.documentID, attemptID: row.attemptID, workspace: row.workspace, body: body))
    }

    /// Brings an item queued under an older version of its form to the version this build
    /// knows, step by step through the spec's upgraders, under a new attempt identity (the
    /// payload changed). An item that does not validate afterwards (a new required field with
    /// no default, a narrowed bound) is parked with the field errors for a person to complete;
    /// one written by a newer build is parked as it is. False when the item was parked.
    func upgrade(_ row: inout OutboxStore.Row, entry: FormRegistry.Entry, from stored: Int, now: Int64) throws -> Bool {
        guard stored < entry.version else {
            try park(&row, as: .rejected, reason: "queued by a newer build (\(row.form ?? "?") version \(stored)); this build knows version \(entry.version)", fieldErrors: [], now: now)
            return false
        }
        guard let payload = row.payload, let upgraded = try? entry.upgrade(payload, from: stored) else {
            try park(&row, as: .rejected, reason: "version \(stored) of \(entry.name) cannot be brought to version \(entry.version)", fieldErrors: [], now: now)
            return false
        }
        row.payload = upgraded
        row.basePayload = row.basePayload.flatMap { try? entry.upgrade($0, from: stored) }
        row.serverPayload = nil
        row.formVersion = entry.version
        row.endpoint = nil
        row.attemptID = environment.newID()
        let errors = entry.validate(upgraded)
        guard errors.isEmpty else {
            try park(&row, as: .rejected, reason: "upgraded from version \(stored) to \(entry.version); complete \(errors.map(\.pointer).joined(separator: ", ")) and resubmit",
                     fieldErrors: errors, now: now)
            return false
        }
        try store.update(row, now: now)
        return true
    }

    /// A lease is over when its time has passed, or when it ends further ahead than a lease can
    /// last (the clock jumped back since it was taken).
    func leaseExpired(_ expiry: Int64?, now: Int64) -> Bool {
        guard let expiry else { return true }
        return expiry <= now || expiry > now.addingClamped(configuration.leaseMilliseconds)
    }
}
