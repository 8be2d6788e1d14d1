import Foundation

extension Outbox {
    // MARK: Network cost

    /// Tells the outbox what the current network costs (from `NWPathMonitor`: `isExpensive`,
    /// `isConstrained`). On a metered network, files larger than the configuration's limit
    /// wait ("waiting for Wi-Fi": `SyncState.waitingForUnmeteredNetwork`); submissions, and
    /// files a person sent with `sendOnAnyNetwork`, never wait. Kept across launches, so a file
    /// that waited for Wi-Fi keeps waiting until the app says the network changed.
    public func setNetworkCost(_ cost: NetworkCost) throws {
        let limit = configuration.fileLimit(on: cost)
        let lifted = limit == nil || (lifecycle.meteredFileLimit.map { limit! > $0 } ?? false)
        let changed = try write(.normal) { () -> Bool in
            guard try store.setMeteredFileLimit(limit) else { return false }
            for (workspace, lane) in try store.fileLanes() { try store.refreshLane(workspace: workspace, lane: lane) }
            return true
        }
        lifecycle.meteredFileLimit = limit
        guard changed else { return }
        let waiting = (try? store.heldForUnmeteredNetwork(workspace: workspace)) ?? 0
        observers.emit(.networkCost(cost, waitingFiles: waiting))
        emitSnapshot(changed: nil)
        if lifted { signalWork() }
    }

    /// "Send now": the file item `id`, or the files a submission `id` waits for, go on any
    /// network, whatever they cost.
    public func sendOnAnyNetwork(_ id: ItemID) throws {
        try write(.normal) {
            guard let row = try store.item(id.rawValue) else { throw OutboxError.noSuchItem(id) }
            guard row.workspace == workspace else {
                throw OutboxError.otherWorkspace(id: id, itemWorkspace: row.workspace, current: workspace)
            }
            var files: [OutboxStore.Row] = row.kind == .file ? [row] : []
            if row.kind == .submission {
                for placeholder in try store.dependencies(of: row.id) {
                    if let producer = try store.producer(of: placeholder, workspace: workspace), let file = try store.item(producer.id),
                        file.kind == .file
                    {
                        files.append(file)
                    }
                }
            }
            for file in files {
                try store.allowAnyNetwork(file.id)
                try store.refreshLane(workspace: file.workspace, lane: file.lane)
            }
        }
        emitSnapshot(changed: nil)
        signalWork()
    }
}
