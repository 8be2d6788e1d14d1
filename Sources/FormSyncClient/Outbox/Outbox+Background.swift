import Foundation

extension Outbox {
    // MARK: Background uploads

    /// Leases up to `limit` due file uploads for an OS background-transfer service, each for
    /// the configuration's `backgroundLease` (a day by default), and returns what the service
    /// needs to run them. While leased they are not sent by the outbox itself; a lease that
    /// runs out (the service never reported back) makes the upload due again, under the same
    /// key. Files too large for one `POST /files` (64 MiB on the reference server) are better
    /// left to the outbox's own resumable uploads.
    public func leaseBackgroundUploads(limit: Int = 4) throws -> [BackgroundUpload] {
        let now = environment.now()
        let leases = try write(.normal) {
            try lifecycle.leaseDue(
                submissions: 0, uploads: max(0, min(limit, 64)), now: now, leaseMilliseconds: configuration.backgroundLeaseMilliseconds)
        }
        return leases.compactMap { lease in
            guard case .file(let path, let contentType, let byteCount, let sha256) = lease.request.body else { return nil }
            return BackgroundUpload(
                itemID: ItemID(lease.itemID), attemptID: lease.attemptID, documentID: lease.request.documentID,
                workspace: lease.request.workspace, principal: lease.request.principal,
                file: URL(fileURLWithPath: path), contentType: contentType ?? "application/octet-stream", byteCount: byteCount,
                sha256: sha256)
        }
    }

    /// Records what became of a background upload: `outcome` is the reply read with
    /// `DeliveryOutcome(status:headers:body:documentID:)` (or `.unreachable` when the service
    /// reports an error with no reply). Works in a relaunched app: the lease is in the database.
    /// An upload whose lease ran out and was sent again meanwhile is left to that attempt.
    public func finishBackgroundUpload(_ upload: BackgroundUpload, outcome: DeliveryOutcome) throws {
        let now = environment.now()
        guard upload.workspace == workspace else {
            throw OutboxError.otherWorkspace(id: upload.itemID, itemWorkspace: upload.workspace, current: workspace)
        }
        let lease = ItemLifecycle.Lease(
            itemID: upload.itemID.rawValue, attemptID: upload.attemptID, attempt: 0,
            request: OutboundRequest(
                itemID: upload.itemID, documentID: upload.documentID, attemptID: upload.attemptID, workspace: upload.workspace,
                body: .file(path: upload.file.path, contentType: upload.contentType, byteCount: upload.byteCount, sha256: upload.sha256)))
        let arrival = FlushInbox.Arrival(lease: lease, outcome: outcome, details: DeliveryDetails(), milliseconds: 0)
        let durability: OutboxDatabase.Durability = { if case .done = outcome { return .full } else { return .normal } }()
        let settled = try write(durability) { try lifecycle.settle(arrival, cancelled: false, now: now) }
        if let removed = settled.removedFile { stash.remove(removed) }
        observers.emit(
            .attemptFinished(item: upload.itemID, outcome: outcome, status: nil, duration: .zero, bytesSent: 0, bytesReceived: 0))
        signalWork()
    }
}
