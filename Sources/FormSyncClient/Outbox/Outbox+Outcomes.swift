import Foundation
import FormSyncModel

extension Outbox {
    /// One attempt's answer, as it came back from the transport.
    struct Arrival: Sendable {
        var lease: Lease
        var outcome: DeliveryOutcome
        var details: DeliveryDetails
        var milliseconds: Int64
    }

    /// Records what became of attempts that came back together, in one transaction: with the
    /// instant transport of the benchmarks, a dozen outcomes cost one commit instead of a
    /// dozen. Each is safe to lose before the commit: its item stays leased, the lease
    /// expires, and the same attempt is sent again (the server's ledger answers with the
    /// recorded result). A confirmed upload makes the commit FULL, since its stash copy is
    /// deleted right after. `cancelled`: the pass was cancelled, so a request that got no
    /// answer is handed back (pending, same key, not counted), not taken as an outage.
    ///
    /// `refill`: slots to lease again in the same transaction, after the answers are recorded
    /// (none once one of them found no server); the leases are returned, already marked sent.
    @discardableResult
    func handle(_ arrivals: [Arrival], cancelled: Bool = false, refill: (submissions: Int, uploads: Int)? = nil) -> [Lease] {
        let now = environment.now()
        for arrival in arrivals {
            inFlight.remove(arrival.lease.itemID)
            observers.emit(.attemptFinished(
                item: ItemID(arrival.lease.itemID), outcome: arrival.outcome, status: arrival.details.status,
                duration: .milliseconds(arrival.milliseconds), bytesSent: arrival.details.bytesSent, bytesReceived: arrival.details.bytesReceived))
            retryingThisFlush.remove(arrival.lease.itemID)
            switch arrival.outcome {
            case .unreachable(let reason): if !cancelled { setNetworkDown(true, reason: reason) }
            default: setNetworkDown(false)
            }
        }
        // A stash copy is deleted only after its confirmation is on disk (FULL): a power loss
        // that undid a NORMAL commit would bring back an upload whose file is gone.
        let durability: OutboxDatabase.Durability = arrivals.contains { arrival in
            if case .done = arrival.outcome { return arrival.lease.request.isFileUpload }
            return false
        } ? .full : .normal
        var results: [(id: Int64, removedFile: String?, submitResult: SubmitResult?)] = []
        var leases: [Lease] = []
        do {
            (results, leases) = try write(durability) {
                let results = try arrivals.map { arrival in
                    let (removedFile, submitResult) = try record(arrival, cancelled: cancelled, now: now)
                    return (arrival.lease.itemID, removedFile, submitResult)
                }
                guard let refill, !report.offline else { return (results, []) }
                return (results, try leaseDue(submissions: refill.submissions, uploads: refill.uploads, now: now))
            }
            markSent(leases)
        } catch {
            // The transitions did not commit: the items stay leased, their leases expire, and
            // the same attempts are sent again; the server's ledger answers with the recorded results.
            for arrival in arrivals { emit(OutboxItemChange(id: ItemID(arrival.lease.itemID), state: .sending)) }
        }
        for result in results {
            if let removedFile = result.removedFile { stash.remove(removedFile) }
            if let submitResult = result.submitResult { resumeWaiters(result.id, with: submitResult) }
        }
        return leases
    }

    /// One outcome's transition, inside `handle`'s transaction: the stash file to delete after
    /// the commit, and what a `submit` waiting for the item is told.
    private func record(_ arrival: Arrival, cancelled: Bool, now: Int64) throws -> (removedFile: String?, submitResult: SubmitResult?) {
        let (lease, outcome, details, milliseconds) = (arrival.lease, arrival.outcome, arrival.details, arrival.milliseconds)
        var removedFile: String?
        var submitResult: SubmitResult?
        guard var row = try store.item(lease.itemID), row.state == .leased, row.attemptID == lease.attemptID else { return (nil, nil) }
        row.leaseExpiresAt = nil
        try store.recordAttempt(item: row.id, sends: row.sends, AttemptRecord(
            at: Date(millisecondsSince1970: now), outcome: outcome.name, status: details.status, reason: Self.outcomeReason(outcome),
            duration: .milliseconds(milliseconds)))
        switch outcome {
        case .done(let ack):
            if row.produces != nil && ack.serverID == nil {
                try retryLater(&row, reason: "the acknowledgement carries no server id", retryAfter: nil, now: now)
                break
            }
            try move(&row, to: .confirmed)
            row.attempts += 1
            row.serverID = ack.serverID
            row.serverVersion = ack.version
            row.lastError = nil
            try store.markConfirmed(row, now: now)
            report.sent += 1
            if let placeholder = row.produces, let serverID = ack.serverID {
                try store.resolve(placeholder: placeholder, serverID: serverID, workspace: row.workspace)
            }
            try withRecords { try $0.storeAcknowledgedRecord(row, ack, now: now) }
            if let placeholder = row.produces, ack.serverID != nil {
                try releaseDependents(of: placeholder, workspace: row.workspace, now: now)
            }
            if row.kind == .file { removedFile = row.filePath }
            submitResult = .confirmed(id: ItemID(row.id), ack)
        case .transient(let reason, let retryAfter):
            try retryLater(&row, reason: reason, retryAfter: retryAfter.map(\.clampedMilliseconds), now: now)
        case .unreachable(let reason):
            try move(&row, to: .pending)
            row.lastError = cancelled ? "stopped before a reply; will be sent again" : "waiting for network: \(reason)"
            try store.update(row, now: now)
            if !cancelled { report.offline = true }
        case .authExpired:
            try move(&row, to: .pending)
            row.nextAttemptAt = now
            row.lastError = "authentication expired; waiting for a new token"
            try store.update(row, now: now)
        case .conflict(let current, let version):
            try merge(&row, current: current, version: version, now: now)
        case .rejected(let reason, let fieldErrors):
            row.attempts += 1
            try park(&row, as: .rejected, reason: reason, fieldErrors: fieldErrors, now: now)
            submitResult = .rejected(id: ItemID(row.id), reason: reason, fieldErrors: fieldErrors)
        }
        try store.refreshLane(workspace: row.workspace, lane: row.lane)
        if submitResult == nil { submitResult = .queued(id: ItemID(row.id), state: publicState(row)) }
        return (removedFile, submitResult)
    }

    static func outcomeReason(_ outcome: DeliveryOutcome) -> String? {
        switch outcome {
        case .done: return nil
        case .transient(let reason, _), .unreachable(let reason), .rejected(let reason, _): return reason
        case .authExpired: return "the token expired"
        case .conflict(_, let version): return "the server's record is at version \(version)"
        }
    }

    func retryLater(_ row: inout OutboxStore.Row, reason: String, retryAfter: Int64?, now: Int64) throws {
        row.attempts += 1
        row.lastError = reason
        if row.attempts >= configuration.retry.maxAttempts {
            try park(&row, as: .exhausted, reason: "gave up after \(row.attempts) attempts; last error: \(reason)", fieldErrors: [], now: now)
            return
        }
        let delay = configuration.retry.delay(afterAttempts: row.attempts, random: environment.random(), retryAfterMilliseconds: retryAfter)
        row.nextAttemptAt = now.addingClamped(delay)
        try move(&row, to: .pending)
        try store.update(row, now: now)
        retryingThisFlush.insert(row.id)
        observers.emit(.backoffScheduled(item: ItemID(row.id), until: Date(millisecondsSince1970: row.nextAttemptAt), reason: reason))
    }

    func merge(_ row: inout OutboxStore.Row, current: Data, version: String, now: Int64) throws {
        row.attempts += 1
        row.serverPayload = current
        row.serverVersion = version
        guard let name = row.form, let entry = registry[name], let local = row.payload, let base = row.basePayload else {
            row.conflicts = try? FormRegistry.encode([FieldConflict(pointer: JSONPointer.root, reason: "The server holds a newer version and this item has no base to merge from.")])
            try park(&row, as: .conflict, reason: "the server's record changed (version \(version))", fieldErrors: [], now: now)
            return
        }
        let merged: (merged: Data, conflicts: [FieldConflict])
        do {
            merged = try entry.merge(base, local, current)
        } catch {
            row.conflicts = try? FormRegistry.encode([FieldConflict(pointer: JSONPointer.root, reason: "The server's record could not be read as \(name).")])
            try park(&row, as: .conflict, reason: "the server's record does not decode: \(error)", fieldErrors: [], now: now)
            return
        }
        if !merged.conflicts.isEmpty {
            row.conflicts = try FormRegistry.encode(merged.conflicts)
            try park(&row, as: .conflict, reason: "changed here and on the server", fieldErrors: [], now: now)
            return
        }
        if row.attempts >= configuration.retry.maxAttempts {
            try park(&row, as: .exhausted, reason: "gave up after \(row.attempts) attempts; the server's record kept changing", fieldErrors: [], now: now)
            return
        }
        row.payload = merged.merged
        row.endpoint = nil
        row.basePayload = current
        row.baseVersion = version
        row.serverPayload = nil
        row.attemptID = environment.newID()
        row.nextAttemptAt = now
        row.lastError = "merged with the server's version \(version)"
        try move(&row, to: .pending)
        try store.update(row, now: now)
    }

    /// Parks an item for a person, and blocks everything that depends on it.
    func park(_ row: inout OutboxStore.Row, as state: State, reason: String, fieldErrors: [FieldError], now: Int64) throws {
        observers.emit(.parked(item: ItemID(row.id), state: publicState(id: row.id, state), reason: reason))
        row.lastError = reason
        row.fieldErrors = fieldErrors.isEmpty ? nil : try FormRegistry.encode(fieldErrors)
        row.leaseExpiresAt = nil
        try move(&row, to: state)
        try store.update(row, now: now)
        try store.refreshLane(workspace: row.workspace, lane: row.lane)
        switch state {
        case .rejected: report.rejected += 1
        case .exhausted: report.exhausted += 1
        case .conflict: report.conflicts += 1
        default: break
        }
        if let placeholder = row.produces { try blockDependents(of: placeholder, workspace: row.workspace, now: now) }
    }
}
