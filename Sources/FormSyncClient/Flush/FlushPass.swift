import FormSyncModel
import Foundation

/// One flush pass: it leases due lane heads into the free slots of two pools (submissions and
/// uploads, so a form never waits behind another item's video), sends them, and records the
/// answers as they come, leasing the slots they freed in the same transaction, until nothing
/// more is due now. It stops leasing at the first "no server answered", pauses for a new
/// token when one expired, and hands its requests back when cancelled.
///
/// It runs on its outbox's thread; its requests run there too, so an answer costs no thread hop.
/// It sees its outbox only through `FlushContext`.
final class FlushPass {
    private var paused = false
    private var refreshes = 0
    private var running = 0
    private var uploads = 0

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
            var leases: [ItemLifecycle.Lease] = []
            func launch(_ leases: [ItemLifecycle.Lease]) {
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
            while true {
                lifecycle.rescanRequested = false
                // The leases taken with the last answers go out first; then whatever is due
                // fills the slots still free.
                launch(leases)
                leases = []
                if !paused && !lifecycle.report.offline && !Task.isCancelled {
                    launch(nextLeases(outbox, transport: transport, free: freeSlots(configuration)))
                }
                if running == 0 {
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
                let arrived = await inbox.takeAll()
                running -= arrived.count
                uploads -= arrived.filter { $0.lease.request.isFileUpload }.count
                if arrived.contains(where: { if case .authExpired = $0.outcome { return true } else { return false } }) { paused = true }
                // The answers are recorded and the slots they freed leased again in one
                // transaction (one commit per turn of the loop instead of two).
                let refill = paused || Task.isCancelled || transport.workspace != outbox.workspace ? nil : freeSlots(configuration)
                leases = record(arrived, outbox, cancelled: Task.isCancelled, refill: refill)
            }
        }
        var result = lifecycle.report
        result.remaining = lifecycle.remainingCount()
        result.retrying = lifecycle.retrying.count
        return result
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
        lifecycle.markSent(leases)
        return leases
    }

    /// Records what became of attempts that came back together, in one transaction: with an
    /// instant transport, a dozen outcomes cost one commit instead of a dozen. Each is safe to
    /// lose before the commit: its item stays leased, the lease expires, and the same attempt
    /// is sent again (the server's ledger answers with the recorded result). A confirmed
    /// upload makes the commit FULL, since its stash copy is deleted right after.
    ///
    /// `refill`: slots to lease again in the same transaction, after the answers are recorded
    /// (none once one of them found no server); the leases are returned, already marked sent.
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
            lifecycle.markSent(leases)
        } catch {
            // The transitions did not commit: the items stay leased, their leases expire, and
            // the same attempts are sent again; the server's ledger answers with the recorded results.
            for arrival in arrivals { lifecycle.emitSnapshot(changed: OutboxItemChange(id: ItemID(arrival.lease.itemID), state: .sending)) }
        }
        for result in settled { outbox.finish(result) }
        return leases
    }
}
