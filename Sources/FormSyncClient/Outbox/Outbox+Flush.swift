import Foundation
import FormSyncModel
import FormSyncSQLite

extension Outbox {
    // MARK: Flush

    /// Sends everything of the current workspace that is due, up to `concurrency` lanes at once,
    /// until nothing more is due now. Concurrent callers share the running flush.
    public func flush() async -> FlushReport {
        if let running = flushTask { return await running.task.value }
        flushGeneration += 1
        let generation = flushGeneration
        let task = Task { await self.runFlush() }
        flushTask = (generation, task)
        let result = await task.value
        if flushTask?.generation == generation { flushTask = nil }
        return result
    }

    func runFlush() async -> FlushReport {
        report = FlushReport()
        retryingThisFlush = []
        var paused = false
        var refreshes = 0
        let transport = self.transport
        await withTaskGroup(of: (Lease, DeliveryOutcome).self) { group in
            var running = 0
            while true {
                rescanRequested = false
                if !paused {
                    while running < configuration.concurrency, let lease = nextLease() {
                        running += 1
                        group.addTask { (lease, await transport.send(lease.request)) }
                    }
                }
                if running == 0 {
                    if paused {
                        refreshes += 1
                        if refreshes <= configuration.maxAuthRefreshesPerFlush, await refreshAuthentication() {
                            paused = false
                            continue
                        }
                        report.authenticationRequired = true
                        break
                    }
                    if rescanRequested { continue }
                    break
                }
                guard let (lease, outcome) = await group.next() else { break }
                running -= 1
                if case .authExpired = outcome { paused = true }
                handle(lease, outcome)
            }
        }
        var result = report
        let open = counts[workspace] ?? [:]
        result.remaining = (open[.pending] ?? 0) + (open[.leased] ?? 0)
        result.retrying = retryingThisFlush.count
        return result
    }

    /// Leases the next due lane head, or nil when nothing is due now.
    func nextLease() -> Lease? {
        let now = environment.now()
        for _ in 0..<8 {
            guard let candidates = try? store.dueLanes(workspace: workspace, now: now, limit: inFlight.count + 1),
                let (lane, head) = candidates.first(where: { !inFlight.contains($0.head) })
            else { return nil }
            do {
                if let lease = try lease(head, lane: lane, now: now) {
                    inFlight.insert(lease.itemID)
                    emit(OutboxItemChange(id: lease.itemID, state: .sent))
                    return lease
                }
            } catch {
                return nil
            }
        }
        return nil
    }

    func lease(_ id: Int64, lane: String, now: Int64) throws -> Lease? {
        try write(.normal) { () throws -> Lease? in
            guard var row = try store.item(id),
                row.state == .pending || (row.state == .leased && (row.leaseExpiresAt ?? 0) <= now)
            else {
                try store.refreshLane(workspace: workspace, lane: lane)
                return nil
            }
            let body: OutboundRequest.Body
            switch row.kind {
            case .file:
                guard let path = row.filePath, let sha = row.sha256 else {
                    try park(&row, as: .rejected, reason: "the stashed file is missing", fieldErrors: [], now: now)
                    return nil
                }
                body = .file(path: path, contentType: row.contentType, byteCount: row.byteCount ?? 0, sha256: sha)
            case .submission:
                guard let name = row.form, let entry = registry[name], let payload = row.payload else {
                    try park(&row, as: .rejected, reason: "form \(row.form ?? "?") is not registered with this outbox", fieldErrors: [], now: now)
                    return nil
                }
                do {
                    let version = row.formVersion ?? entry.version
                    if let endpoint = row.endpoint {
                        body = .submission(form: name, version: version, endpoint: endpoint, payload: payload, baseVersion: row.baseVersion)
                    } else {
                        let remapped = try entry.remap(payload, try store.resolvedDependencies(of: row.id))
                        body = .submission(form: name, version: version, endpoint: remapped.endpoint, payload: remapped.payload, baseVersion: row.baseVersion)
                    }
                } catch let error as SQLiteError {
                    throw error
                } catch {
                    try park(&row, as: .rejected, reason: "the stored payload no longer decodes as \(name): \(error)", fieldErrors: [], now: now)
                    return nil
                }
            }
            try move(&row, to: .leased)
            row.leaseExpiresAt = now + configuration.leaseMilliseconds
            try store.update(row, now: now)
            try store.refreshLane(workspace: row.workspace, lane: row.lane)
            return Lease(
                itemID: row.id, attemptID: row.attemptID,
                request: OutboundRequest(itemID: row.id, documentID: row.documentID, attemptID: row.attemptID, workspace: row.workspace, body: body))
        }
    }
}
