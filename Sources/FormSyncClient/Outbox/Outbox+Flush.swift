import FormSyncModel
import Foundation

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
        if let reason = lifecycle.revocationReason { return revokedReport(reason) }
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
        cancelled.remaining = lifecycle.remainingCount()
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
        await askFeaturesIfWaiting()
        var result = await FlushPass().run(self)
        passWaiters[id] = nil
        if pass?.id == id { pass = nil }
        // Revoked while the pass ran (its refresh was told so): what it handed back is sealed.
        if let reason = lifecycle.revocationReason { result = revokedReport(reason) }
        // So is what came back from the wire of a person revoked meanwhile.
        if (try? sealRevokedPeoplesItems(now: environment.now())) ?? 0 > 0 { result.remaining = lifecycle.remainingCount() }
        return result
    }

    /// Once per launch, when a submission waits for its files and the server was never heard
    /// to take them later: asks the server (`GET /health`), so that the first delivery after an
    /// install or a server upgrade need not wait for its photo's upload to learn it.
    func askFeaturesIfWaiting() async {
        guard !featuresAsked, !store.defersFiles, (try? store.anyHeadWaitsForDeferrableFile()) == true else { return }
        guard let features = await transport.serverFeatures() else { return }
        featuresAsked = true
        _ = try? write(.normal) { try lifecycle.setDefersFiles(features.contains(ItemLifecycle.deferredFilesFeature)) }
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
        lifecycle.remainingCount() > 0
    }

    /// Whether the last attempt found no server (pending items show as waiting for network).
    public var isWaitingForNetwork: Bool { lifecycle.networkDown }

    /// Asks the current workspace's server whether it answers now; a success ends "waiting for
    /// network". The engine calls this before it resumes after an outage.
    public func probe() async -> Bool {
        let transport = self.transport
        let reachable = await transport.probe()
        if reachable && transport.workspace == workspace { setNetworkDown(false) }
        return reachable
    }

    func setNetworkDown(_ down: Bool, reason: String = "no server answered") {
        guard lifecycle.networkDown != down else { return }
        lifecycle.networkDown = down
        observers.emit(down ? .offline(reason: reason) : .online)
        emitSnapshot(changed: nil)
    }
}
