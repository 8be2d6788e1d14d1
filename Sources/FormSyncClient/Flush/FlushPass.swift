import FormSyncModel
import Foundation

/// One flush pass: it leases due lane heads into the free slots of two pools (submissions and
/// uploads, so a form never waits behind another item's video), sends them, and records the
/// answers as they come, leasing the slots they freed in the same transaction, until nothing
/// more is due now. It stops leasing at the first "no server answered", pauses for a new
/// token when one expired, and hands its requests back when cancelled.
///
/// While answers come faster than it can record them one turn at a time (a fast server, a
/// transport in the same process), it leases submissions ahead of the free slots and sends
/// them as slots free up, recording the answers in one transaction when the leases ahead run
/// out: a dozen answers and a dozen leases per commit instead of a few. Never more requests
/// are on the wire than the configuration's concurrency; leases ahead that are not sent when
/// the pass ends are handed back unsent.
///
/// It runs on its outbox's thread; its requests run there too, so an answer costs no thread hop.
/// It sees its outbox only through `FlushContext`.
final class FlushPass {
    private var paused = false
    private var refreshes = 0
    private var running = 0
    private var uploads = 0
    /// Leased and committed, not sent yet, in the order they were leased.
    private var ahead: [ItemLifecycle.Lease] = []
    /// Whether the last answers were there before the pass looked for them (it leases ahead
    /// only then: over a network that keeps it waiting, a lease is taken when a slot frees).
    private var answersOutpace = false

    func run<Context: FlushContext>(_ outbox: isolated Context) async -> FlushReport {
        let lifecycle = outbox.lifecycle
        lifecycle.report = FlushReport()
        lifecycle.retrying = []
        let transport = outbox.transport
        let configuration = outbox.configuration
        let hub = outbox.observers
        let clock = outbox.clock
        // Answers land in the inbox as they come; the loop takes all that arrived at once and
        // records them in one transaction.
        let inbox = FlushInbox()
        let executor = outbox.requestExecutor
        await withDiscardingTaskGroup { group in
            func launch(_ leases: [ItemLifecycle.Lease]) {
                lifecycle.markSent(leases)
                for lease in leases {
                    running += 1
                    if lease.request.isFileUpload { uploads += 1 }
                    hub.emit(
                        .attemptStarted(
                            item: ItemID(lease.itemID), kind: lease.request.isFileUpload ? .file : .submission, form: lease.request.form,
                            attempt: lease.attempt))
                    group.addTask(executorPreference: executor) {
                        CrashPoint.leased.reach()
                        let started = clock()
                        let item = ItemID(lease.itemID)
                        let (outcome, details) = await transport.deliver(lease.request) { sent, total in
                            hub.emit(.uploadProgress(item: item, sent: sent, total: total))
                        }
                        if case .done = outcome { CrashPoint.delivered.reach() }
                        inbox.put(
                            FlushInbox.Arrival(lease: lease, outcome: outcome, details: details, milliseconds: max(0, clock() - started)))
                    }
                }
            }
            // Answers taken from the inbox and not recorded yet.
            var unrecorded: [FlushInbox.Arrival] = []
            var recordNow = false
            while true {
                lifecycle.rescanRequested = false
                // An answer to act on at once is recorded before anything more goes out.
                if recordNow { recordAnswers(&unrecorded, outbox, transport: transport) }
                recordNow = false
                if canSend(outbox, transport: transport) {
                    launch(takeAhead(configuration))
                    // Submission slots the leases ahead could not fill: lease for them (and
                    // ahead), recording what came back in the same transaction.
                    if freeSlots(configuration).submissions > 0 {
                        if unrecorded.isEmpty {
                            ahead += nextLeases(outbox, transport: transport, free: refill(configuration))
                        } else {
                            recordAnswers(&unrecorded, outbox, transport: transport)
                        }
                        if canSend(outbox, transport: transport) { launch(takeAhead(configuration)) }
                    }
                }
                if running == 0 {
                    if !unrecorded.isEmpty {
                        recordNow = true
                        continue
                    }
                    if paused && !lifecycle.report.offline && !Task.isCancelled {
                        refreshes += 1
                        if refreshes <= configuration.maxAuthRefreshesPerFlush, await outbox.renewToken() {
                            paused = false
                            continue
                        }
                        lifecycle.report.authenticationRequired = true
                        break
                    }
                    if lifecycle.rescanRequested && !lifecycle.report.offline && !Task.isCancelled { continue }
                    break
                }
                // With the requests' executor preferred, the wake-up of an answer (or of the
                // yield for one) stays on this thread instead of passing through the global pool.
                let (arrived, waited) = await withTaskExecutorPreference(executor) { await inbox.takeAll() }
                answersOutpace = !waited
                running -= arrived.count
                uploads -= arrived.filter { $0.lease.request.isFileUpload }.count
                if arrived.contains(where: { if case .authExpired = $0.outcome { return true } else { return false } }) { paused = true }
                unrecorded += arrived
                // Answers that came while the pass was busy are recorded with the next ones, once
                // the leases ahead run out; any other answer, or one the pass had to wait for,
                // at once.
                recordNow =
                    waited || paused || Task.isCancelled
                    || arrived.contains { arrival in
                        if case .done = arrival.outcome { return false }
                        return true
                    }
            }
            handBack(outbox)
        }
        var result = lifecycle.report
        result.remaining = lifecycle.remainingCount()
        result.retrying = lifecycle.retrying.count
        return result
    }

    /// Whether the pass may send now: not paused for a token, not offline, not cancelled, and
    /// its transport still the outbox's workspace's.
    private func canSend<Context: FlushContext>(_ outbox: isolated Context, transport: any OutboxTransport) -> Bool {
        !paused && !outbox.lifecycle.report.offline && !Task.isCancelled && transport.workspace == outbox.workspace
    }

    /// Records the answers taken and not recorded yet, leasing the slots they freed (and ahead)
    /// in the same transaction while the pass may send: one commit per batch of answers.
    private func recordAnswers<Context: FlushContext>(
        _ unrecorded: inout [FlushInbox.Arrival], _ outbox: isolated Context, transport: any OutboxTransport
    ) {
        guard !unrecorded.isEmpty else { return }
        let refill = canSend(outbox, transport: transport) ? refill(outbox.configuration) : nil
        ahead += record(unrecorded, outbox, cancelled: Task.isCancelled, refill: refill)
        unrecorded = []
    }

    /// How many submissions a pass leases ahead of its free slots: three turns' worth, at most
    /// 192 (a concurrency of any size, `Int.max` included).
    private func aheadLimit(_ configuration: Outbox.Configuration) -> Int {
        max(0, min(configuration.concurrency, 64)) * 3
    }

    /// What to lease: the free slots, and, while answers outpace the pass, submissions ahead up
    /// to the limit.
    private func refill(_ configuration: Outbox.Configuration) -> (submissions: Int, uploads: Int) {
        let free = freeSlots(configuration)
        guard answersOutpace else { return free }
        let waiting = ahead.filter { !$0.request.isFileUpload }.count
        let (wanted, overflow) = free.submissions.addingReportingOverflow(max(0, aheadLimit(configuration) - waiting))
        return (overflow ? .max : wanted, free.uploads)
    }

    /// The leases ahead that fit the free slots, oldest first; the rest stay ahead.
    private func takeAhead(_ configuration: Outbox.Configuration) -> [ItemLifecycle.Lease] {
        var free = freeSlots(configuration)
        var sending: [ItemLifecycle.Lease] = []
        var kept: [ItemLifecycle.Lease] = []
        for lease in ahead {
            if lease.request.isFileUpload ? free.uploads > 0 : free.submissions > 0 {
                if lease.request.isFileUpload { free.uploads -= 1 } else { free.submissions -= 1 }
                sending.append(lease)
            } else {
                kept.append(lease)
            }
        }
        ahead = kept
        return sending
    }

    /// Hands back the leases ahead that were never sent: their items are pending again (in one
    /// transaction; if it fails, the leases run out instead).
    private func handBack<Context: FlushContext>(_ outbox: isolated Context) {
        guard !ahead.isEmpty else { return }
        let lifecycle = outbox.lifecycle
        let leases = ahead
        ahead = []
        let now = outbox.clock()
        _ = try? outbox.write(.normal) { try lifecycle.release(leases, now: now) }
        lifecycle.forgetAhead(leases)
        for lease in leases {
            lifecycle.emitSnapshot(
                changed: OutboxItemChange(id: ItemID(lease.itemID), state: lifecycle.publicState(id: lease.itemID, .pending)))
        }
    }

    /// The slots free in each pool.
    private func freeSlots(_ configuration: Outbox.Configuration) -> (submissions: Int, uploads: Int) {
        (configuration.concurrency - (running - uploads), configuration.uploadConcurrency - uploads)
    }

    /// Leases due lane heads into the free slots, in one transaction (none when nothing is due now).
    private func nextLeases<Context: FlushContext>(
        _ outbox: isolated Context, transport: any OutboxTransport, free: (submissions: Int, uploads: Int)
    ) -> [ItemLifecycle.Lease] {
        let lifecycle = outbox.lifecycle
        guard transport.workspace == outbox.workspace else { return [] }
        let now = outbox.clock()
        // Nothing due (the usual answer for the upload pool): no transaction.
        guard (try? lifecycle.anyDue(submissions: free.submissions, uploads: free.uploads, now: now)) == true else { return [] }
        guard
            let leases = try? outbox.write(
                .normal, { try lifecycle.leaseDue(submissions: free.submissions, uploads: free.uploads, now: now) })
        else { return [] }
        lifecycle.holdAhead(leases)
        return leases
    }

    /// Records what became of attempts that came back together, in one transaction: with an
    /// instant transport, a dozen outcomes cost one commit instead of a dozen. Each is safe to
    /// lose before the commit: its item stays leased, the lease expires, and the same attempt
    /// is sent again (the server's ledger answers with the recorded result). A confirmed
    /// upload makes the commit FULL, since its stash copy is deleted right after.
    ///
    /// `refill`: slots to lease again in the same transaction, after the answers are recorded
    /// (none once one of them found no server); the leases are returned, held for the pass.
    private func record<Context: FlushContext>(
        _ arrivals: [FlushInbox.Arrival], _ outbox: isolated Context, cancelled: Bool, refill: (submissions: Int, uploads: Int)?
    ) -> [ItemLifecycle.Lease] {
        let lifecycle = outbox.lifecycle
        let now = outbox.clock()
        for arrival in arrivals {
            lifecycle.inFlight.remove(arrival.lease.itemID)
            outbox.observers.emit(
                .attemptFinished(
                    item: ItemID(arrival.lease.itemID), outcome: arrival.outcome, status: arrival.details.status,
                    duration: .milliseconds(arrival.milliseconds), bytesSent: arrival.details.bytesSent,
                    bytesReceived: arrival.details.bytesReceived))
            lifecycle.retrying.remove(arrival.lease.itemID)
            switch arrival.outcome {
            case .unreachable(let reason): if !cancelled { outbox.setNetworkDown(true, reason: reason) }
            default: outbox.setNetworkDown(false, reason: "")
            }
        }
        // A stash copy is deleted only after its confirmation is on disk (FULL): a power loss
        // that undid a NORMAL commit would bring back an upload whose file is gone.
        let durability: OutboxDatabase.Durability =
            arrivals.contains { arrival in
                if case .done = arrival.outcome { return arrival.lease.request.isFileUpload }
                return false
            } ? .full : .normal
        var settled: [ItemLifecycle.Settled] = []
        var leases: [ItemLifecycle.Lease] = []
        do {
            (settled, leases) = try outbox.write(durability) {
                let settled = try arrivals.map { try lifecycle.settle($0, cancelled: cancelled, now: now) }
                guard let refill, !lifecycle.report.offline else { return (settled, []) }
                return (settled, try lifecycle.leaseDue(submissions: refill.submissions, uploads: refill.uploads, now: now))
            }
            lifecycle.holdAhead(leases)
        } catch {
            // The transitions did not commit: the items stay leased, their leases expire, and
            // the same attempts are sent again; the server's ledger answers with the recorded results.
            for arrival in arrivals { lifecycle.emitSnapshot(changed: OutboxItemChange(id: ItemID(arrival.lease.itemID), state: .sending)) }
        }
        for result in settled { outbox.finish(result) }
        return leases
    }
}
