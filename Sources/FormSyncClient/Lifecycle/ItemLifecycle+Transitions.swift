@_spi(Generated) import FormSyncModel
import FormSyncProtocol
import Foundation

extension ItemLifecycle {
    /// What one answer did to its item, inside the flush's transaction: the stash file to
    /// delete after the commit, and what a `submit` waiting for the item is told.
    struct Settled {
        var id: Int64
        var removedFile: String?
        var submitResult: SubmitResult?
    }

    /// Records one attempt's answer, inside the caller's transaction. `cancelled`: the pass
    /// was cancelled, so a request that got no answer is handed back (pending, same key, not
    /// counted), not taken as an outage. An answer for a lease that is no longer current (it
    /// expired and another attempt took the item) changes nothing.
    func settle(_ arrival: FlushInbox.Arrival, cancelled: Bool, now: Int64) throws -> Settled {
        let (lease, outcome, details, milliseconds) = (arrival.lease, arrival.outcome, arrival.details, arrival.milliseconds)
        var settled = Settled(id: lease.itemID)
        guard var row = try store.item(lease.itemID), row.state == .leased, row.attemptID == lease.attemptID else { return settled }
        row.leaseExpiresAt = nil
        try store.recordAttempt(
            item: row.id, sends: row.sends,
            AttemptRecord(
                at: Date(millisecondsSince1970: now), outcome: outcome.name, status: details.status, reason: Self.outcomeReason(outcome),
                duration: .milliseconds(milliseconds)))
        try learnFeatures(details, outcome, namesPending: lease.namesPendingFiles)
        // A server that does not take deferred files refused the digests: the item waits for
        // its files instead, with nothing counted against it, as a new request (the refused one
        // applied nothing).
        if lease.namesPendingFiles, case .rejected = outcome, !store.defersFiles {
            move(&row, to: .pending)
            row.attemptID = environment.newID()
            row.nextAttemptAt = now
            row.lastError = "the server does not take files after their submission; sending the files first"
            try store.update(row, now: now)
            try store.refreshLane(workspace: row.workspace, lane: row.lane)
            settled.submitResult = .queued(id: ItemID(row.id), state: publicState(row))
            return settled
        }
        switch outcome {
        case .done(let ack):
            if row.produces != nil && ack.serverID == nil {
                try retryLater(&row, reason: "the acknowledgement carries no server id", retryAfter: nil, now: now)
                break
            }
            try confirm(&row, ack, now: now)
            // Copies are shared by digest: one goes once no waiting upload names it.
            if row.kind == .file, let path = row.filePath, try !store.referencesFile(path) { settled.removedFile = path }
            settled.submitResult = .confirmed(id: ItemID(row.id), ack)
        case .transient(let reason, let retryAfter):
            try retryLater(&row, reason: reason, retryAfter: retryAfter.map(\.clampedMilliseconds), now: now)
        case .unreachable(let reason):
            move(&row, to: .pending)
            row.lastError = cancelled ? "stopped before a reply; will be sent again" : "waiting for network: \(reason)"
            try store.update(row, now: now)
            if !cancelled { report.offline = true }
        case .authExpired:
            move(&row, to: .pending)
            row.nextAttemptAt = now
            row.lastError = "authentication expired; waiting for a new token"
            try store.update(row, now: now)
        case .conflict(let current, let version):
            row.lastChange = details.lastChange.flatMap { try? JSONEncoder().encode($0) }
            try merge(&row, current: current, version: version, now: now)
        case .rejected(let reason, let fieldErrors):
            row.attempts += 1
            try park(&row, as: .rejected, reason: reason, fieldErrors: fieldErrors, now: now)
            settled.submitResult = .rejected(id: ItemID(row.id), reason: reason, fieldErrors: fieldErrors)
        }
        try store.refreshLane(workspace: row.workspace, lane: row.lane)
        if settled.submitResult == nil { settled.submitResult = .queued(id: ItemID(row.id), state: publicState(row)) }
        return settled
    }

    /// What a genuine reply says the server supports (`FormSync-Features`): an acknowledgement,
    /// or a refusal of a request that named files by digest. When deferred files come or go,
    /// the lanes waiting for files are looked at again.
    func learnFeatures(_ details: DeliveryDetails, _ outcome: DeliveryOutcome, namesPending: Bool) throws {
        guard details.status != nil else { return }
        switch outcome {
        case .done: break
        case .rejected where namesPending: break
        default: return
        }
        if case .rejected = outcome, details.serverFeatures?.contains(Self.deferredFilesFeature) == true { return }
        try setDefersFiles(details.serverFeatures?.contains(Self.deferredFilesFeature) ?? false)
    }

    /// The feature a server announces when it takes files after their submission.
    static let deferredFilesFeature = Feature.deferredFiles.rawValue

    /// Records whether the server takes deferred files, and looks at every lane waiting for a
    /// file again when that changed.
    func setDefersFiles(_ value: Bool) throws {
        guard try store.setDefersFiles(value) else { return }
        for (workspace, lane) in try store.lanesWaitingForDependencies() { try store.refreshLane(workspace: workspace, lane: lane) }
        if value { rescanRequested = true }
    }

    /// The server holds the item: it leaves the queue, the record it created or changed is
    /// stored, and what waited for its placeholder may go.
    private func confirm(_ row: inout OutboxStore.Row, _ ack: ServerAcknowledgement, now: Int64) throws {
        move(&row, to: .confirmed)
        row.attempts += 1
        row.serverID = ack.serverID
        row.serverVersion = ack.version
        row.lastError = nil
        try store.markConfirmed(row, now: now)
        report.sent += 1
        var landed: [Int64] = []
        if let placeholder = row.produces, let serverID = ack.serverID {
            try store.resolve(placeholder: placeholder, serverID: serverID, workspace: row.workspace)
            landed.append(placeholder)
        }
        // Each item of a list that created records: its placeholder is the record's server id.
        let items = row.kind == .submission ? try store.itemRecords(of: row.id) : []
        if !items.isEmpty {
            let created = Dictionary(ack.createdRecords.map { ("\($0.list)/\($0.index)", $0.record) }, uniquingKeysWith: { a, _ in a })
            for item in items {
                guard let record = created["\(item.list)/\(item.position)"], record.type == item.type else {
                    // The server made no record of this item (it does not know the list creates
                    // them): what named it cannot go, and waits for a person.
                    try blockDependents(of: item.placeholder, workspace: row.workspace, now: now)
                    continue
                }
                try store.resolve(placeholder: item.placeholder, serverID: record.id, workspace: row.workspace)
                landed.append(item.placeholder)
            }
        }
        let confirmed = row
        try withRecords { try $0.storeAcknowledgedRecord(confirmed, ack, now: now) }
        for placeholder in landed { try releaseDependents(of: placeholder, workspace: row.workspace, now: now) }
    }

    static func outcomeReason(_ outcome: DeliveryOutcome) -> String? {
        switch outcome {
        case .done: return nil
        case .transient(let reason, _), .unreachable(let reason), .rejected(let reason, _): return reason
        case .authExpired: return "the token expired"
        case .conflict(_, let version): return "the server's record is at version \(version)"
        }
    }

    /// Back to pending for a later attempt (the policy's backoff, or the server's
    /// `Retry-After` within the policy's ceiling); parked as exhausted once the budget is spent.
    func retryLater(_ row: inout OutboxStore.Row, reason: String, retryAfter: Int64?, now: Int64) throws {
        row.attempts += 1
        row.lastError = reason
        if row.attempts >= configuration.retry.maxAttempts {
            try park(
                &row, as: .exhausted, reason: "gave up after \(row.attempts) attempts; last error: \(reason)", fieldErrors: [], now: now)
            return
        }
        let delay = configuration.retry.delay(afterAttempts: row.attempts, random: environment.random(), retryAfterMilliseconds: retryAfter)
        row.nextAttemptAt = now.addingClamped(delay)
        move(&row, to: .pending)
        try store.update(row, now: now)
        retrying.insert(row.id)
        observers.emit(.backoffScheduled(item: ItemID(row.id), until: Date(millisecondsSince1970: row.nextAttemptAt), reason: reason))
    }

    /// A stale base: the form's conflict policies merge the device's change into the server's
    /// record, and the result goes again as an edit of that version; a change on both sides
    /// that no policy settles is parked as a conflict for a person.
    func merge(_ row: inout OutboxStore.Row, current: Data, version: String, now: Int64) throws {
        row.attempts += 1
        row.serverPayload = current
        row.serverVersion = version
        guard let name = row.form, let entry = registry[name], let local = row.payload, let base = row.basePayload else {
            row.conflicts = try? FormRegistry.encode([
                FieldConflict(
                    pointer: JSONPointer.root, reason: "The server holds a newer version and this item has no base to merge from.")
            ])
            try park(&row, as: .conflict, reason: "the server's record changed (version \(version))", fieldErrors: [], now: now)
            return
        }
        // A delete decided on a version someone changed since is a person's call: the change
        // may be why the record should stay. Resolving the conflict deletes the newer version.
        if entry.recordAction?.kind == .deletes {
            row.conflicts = try? FormRegistry.encode([
                FieldConflict(pointer: JSONPointer.root, reason: "The record changed on the server after it was chosen for deletion.")
            ])
            try park(
                &row, as: .conflict, reason: "the record changed on the server (version \(version)) after it was chosen for deletion",
                fieldErrors: [], now: now)
            return
        }
        let merged: (merged: Data, conflicts: [FieldConflict])
        do {
            merged = try entry.merge(base, local, current)
        } catch {
            row.conflicts = try? FormRegistry.encode([
                FieldConflict(pointer: JSONPointer.root, reason: "The server's record could not be read as \(name).")
            ])
            try park(&row, as: .conflict, reason: "the server's record does not decode: \(error)", fieldErrors: [], now: now)
            return
        }
        if !merged.conflicts.isEmpty {
            row.conflicts = try FormRegistry.encode(merged.conflicts)
            try park(&row, as: .conflict, reason: "changed here and on the server", fieldErrors: [], now: now)
            return
        }
        if row.attempts >= configuration.retry.maxAttempts {
            try park(
                &row, as: .exhausted, reason: "gave up after \(row.attempts) attempts; the server's record kept changing", fieldErrors: [],
                now: now)
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
        move(&row, to: .pending)
        try store.update(row, now: now)
    }

    /// Parks an item for a person, and blocks everything that depends on it.
    func park(_ row: inout OutboxStore.Row, as state: State, reason: String, fieldErrors: [FieldError], now: Int64) throws {
        observers.emit(.parked(item: ItemID(row.id), state: publicState(id: row.id, state), reason: reason))
        row.lastError = reason
        row.fieldErrors = fieldErrors.isEmpty ? nil : try FormRegistry.encode(fieldErrors)
        row.leaseExpiresAt = nil
        move(&row, to: state)
        try store.update(row, now: now)
        try store.refreshLane(workspace: row.workspace, lane: row.lane)
        switch state {
        case .rejected: report.rejected += 1
        case .exhausted: report.exhausted += 1
        case .conflict: report.conflicts += 1
        default: break
        }
        for placeholder in try store.producedPlaceholders(of: row) {
            try blockDependents(of: placeholder, workspace: row.workspace, now: now)
        }
    }

    /// Back to pending with a fresh attempt budget; blocked if a dependency still needs attention.
    func reopen(_ row: inout OutboxStore.Row, now: Int64) throws {
        row.attempts = 0
        row.nextAttemptAt = now
        row.lastError = nil
        row.fieldErrors = nil
        move(&row, to: try dependencyProblem(row.id, workspace: row.workspace) ? .blocked : .pending)
        try store.update(row, now: now)
        try store.refreshLane(workspace: row.workspace, lane: row.lane)
        if row.state == .pending {
            for placeholder in try store.producedPlaceholders(of: row) {
                try releaseDependents(of: placeholder, workspace: row.workspace, now: now)
            }
        }
        rescanRequested = true
        observers.signalWork()
    }

    /// Removes a parked or blocked item for good, inside the caller's transaction; what
    /// depends on it stays blocked. Returns its stash file, to delete once this commits.
    func discard(_ id: ItemID, now: Int64) throws -> String? {
        var row = try existing(id)
        guard Self.isStuck(row.state) else { throw OutboxError.notAllowed(id: id, state: publicState(row), action: "discard") }
        for placeholder in try store.producedPlaceholders(of: row) {
            try blockDependents(of: placeholder, workspace: row.workspace, now: now)
        }
        try store.forgetDocumentDigests(item: row.id, workspace: row.workspace, documentID: row.documentID)
        move(&row, to: nil)
        try store.delete(row.id)
        try store.refreshLane(workspace: row.workspace, lane: row.lane)
        return row.filePath
    }

    /// Brings an item queued under an older version of its form to the version this build
    /// knows, step by step through the spec's upgraders, under a new attempt identity (the
    /// payload changed). An item that does not validate afterwards (a new required field with
    /// no default, a narrowed bound) is parked with the field errors for a person to complete;
    /// one written by a newer build is parked as it is. False when the item was parked.
    func upgrade(_ row: inout OutboxStore.Row, entry: FormRegistry.Entry, from stored: Int, now: Int64) throws -> Bool {
        guard stored < entry.version else {
            try park(
                &row, as: .rejected,
                reason: "queued by a newer build (\(row.form ?? "?") version \(stored)); this build knows version \(entry.version)",
                fieldErrors: [], now: now)
            return false
        }
        guard let payload = row.payload, var upgraded = try? entry.upgrade(payload, from: stored) else {
            try park(
                &row, as: .rejected, reason: "version \(stored) of \(entry.name) cannot be brought to version \(entry.version)",
                fieldErrors: [], now: now)
            return false
        }
        // Upgraded, the item is recalculated under the new spec: a changed calculation gets its
        // new value, a field that no longer applies is cleared. (One that does not decode keeps
        // its bytes, and its field errors below say why.)
        upgraded = (try? entry.recalculate(upgraded)) ?? upgraded
        row.payload = upgraded
        row.basePayload = row.basePayload.flatMap { try? entry.upgrade($0, from: stored) }
        row.serverPayload = nil
        row.formVersion = entry.version
        row.endpoint = nil
        row.attemptID = environment.newID()
        let errors = entry.validate(upgraded)
        guard errors.isEmpty else {
            try park(
                &row, as: .rejected,
                reason:
                    "upgraded from version \(stored) to \(entry.version); complete \(errors.map(\.pointer).joined(separator: ", ")) and resubmit",
                fieldErrors: errors, now: now)
            return false
        }
        try store.update(row, now: now)
        return true
    }
}
