import FormSyncModel
import Foundation

extension ItemLifecycle {
    /// An item on the wire: which attempt of it, under which key, and the request itself.
    struct Lease: Sendable {
        var itemID: Int64
        var attemptID: String
        /// Which attempt this is, from 1.
        var attempt: Int
        var request: OutboundRequest
        /// Whether the request names files by digest that have not landed (deferred files).
        var namesPendingFiles = false
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
        let skip = inFlight.count + leasedAhead.count + retrying.count + skipping.count
        // (`count` is a pool's free slots: as large as the app's concurrency, `Int.max` included.)
        let (limit, overflow) = skip.addingReportingOverflow(count)
        let candidates = try store.dueLanes(
            workspace: workspace, now: now, horizon: configuration.horizonMilliseconds, limit: overflow ? .max : limit, files: files)
        return Array(
            candidates.filter {
                !inFlight.contains($0.head) && !leasedAhead.contains($0.head) && !retrying.contains($0.head) && !skipping.contains($0.head)
            }.prefix(count))
    }

    /// Leases due lane heads inside the caller's transaction (a flush pass's, on its own or
    /// with the answers that freed the slots); `markSent` once that transaction committed.
    /// `leaseMilliseconds`: how long the leases last (the configuration's by default).
    func leaseDue(submissions: Int, uploads: Int, now: Int64, leaseMilliseconds: Int64? = nil) throws -> [Lease] {
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
            let got = try picks.compactMap { try lease($0.head, lane: $0.lane, now: now, for: leaseMilliseconds) }
            leases += got
            if got.count == picks.count { break }
        }
        return leases
    }

    /// After the leases' transaction committed: they are in flight, and shown as sent.
    func markSent(_ leases: [Lease]) {
        for lease in leases {
            leasedAhead.remove(lease.itemID)
            inFlight.insert(lease.itemID)
            emitSnapshot(changed: OutboxItemChange(id: ItemID(lease.itemID), state: .sent))
        }
    }

    /// After the leases' transaction committed, for leases a flush pass sends later, as its
    /// slots free up: no other lease takes their items meanwhile.
    func holdAhead(_ leases: [Lease]) {
        leasedAhead.formUnion(leases.map(\.itemID))
    }

    /// Hands back, inside the caller's transaction, leases a flush pass took ahead and never
    /// sent: each item is pending again as it was before its lease (not counted as sent), and
    /// its lane due now. A lease the item no longer holds is left alone.
    func release(_ leases: [Lease], now: Int64) throws {
        for lease in leases {
            guard var row = try store.item(lease.itemID), row.state == .leased, row.attemptID == lease.attemptID else { continue }
            move(&row, to: .pending)
            row.leaseExpiresAt = nil
            row.sends = max(0, row.sends - 1)
            try store.update(row, now: now)
            try store.refreshLane(workspace: row.workspace, lane: row.lane)
        }
    }

    /// Once the release's transaction committed (or failed: the leases then run out).
    func forgetAhead(_ leases: [Lease]) {
        for lease in leases { leasedAhead.remove(lease.itemID) }
    }

    /// Leases one lane head inside the caller's transaction; nil when it cannot go now (it was
    /// taken or parked meanwhile, or it was just parked because it cannot be sent at all).
    func lease(_ id: Int64, lane: String, now: Int64, for milliseconds: Int64? = nil) throws -> Lease? {
        guard var row = try store.item(id), row.workspace == workspace,
            row.state == .pending || (row.state == .leased && leaseExpired(row.leaseExpiresAt, now: now))
        else {
            try store.refreshLane(workspace: workspace, lane: lane)
            return nil
        }
        // Its owner signed out: it goes out only under their credential, so it waits for them
        // (a lease of theirs that ran out returns to pending, and the lane waits).
        if let owner = row.principal, !present.contains(owner) {
            if row.state == .leased {
                move(&row, to: .pending)
                row.leaseExpiresAt = nil
                try store.update(row, now: now)
            }
            try store.refreshLane(workspace: row.workspace, lane: row.lane)
            return nil
        }
        let body: OutboundRequest.Body
        var namesPending = false
        switch row.kind {
        case .file:
            guard let path = row.filePath, let sha = row.sha256, FileManager.default.isReadableFile(atPath: path) else {
                try park(&row, as: .rejected, reason: "the stashed copy of the file is missing", fieldErrors: [], now: now)
                return nil
            }
            body = .file(path: path, contentType: row.contentType, byteCount: row.byteCount ?? 0, sha256: sha)
        case .submission:
            guard let name = row.form, let entry = registry[name], row.payload != nil else {
                try park(
                    &row, as: .rejected, reason: "form \(row.form ?? "?") is not registered with this outbox", fieldErrors: [], now: now)
                return nil
            }
            if let stored = row.formVersion, stored != entry.version {
                guard try upgrade(&row, entry: entry, from: stored, now: now) else { return nil }
            }
            guard let payload = row.payload else { return nil }
            // A storage error reaches the caller; only a payload that no longer decodes parks.
            let resolved = row.endpoint == nil ? try store.resolvedDependencies(of: row.id, workspace: row.workspace) : [:]
            // Files that may go after it and have not landed are named by their digest.
            let deferred = row.endpoint == nil ? try store.deferredFiles(of: row.id, attempt: row.attemptID, workspace: row.workspace) : [:]
            do {
                let version = row.formVersion ?? entry.version
                if let endpoint = row.endpoint {
                    body = .submission(form: name, version: version, endpoint: endpoint, payload: payload, baseVersion: row.baseVersion)
                } else {
                    var source = payload
                    if !deferred.isEmpty, let mapFiles = entry.mapFiles {
                        source = try mapFiles(payload) { ref in deferred[ref.id] ?? ref }
                        namesPending = true
                    }
                    let remapped = try entry.remap(source, resolved)
                    body = .submission(
                        form: name, version: version, endpoint: remapped.endpoint, payload: remapped.payload, baseVersion: row.baseVersion)
                }
            } catch {
                try park(
                    &row, as: .rejected, reason: "the stored payload no longer decodes as \(name): \(error)", fieldErrors: [], now: now)
                return nil
            }
        }
        move(&row, to: .leased)
        row.leaseExpiresAt = now.addingClamped(milliseconds ?? configuration.leaseMilliseconds)
        row.sends += 1
        // Only the lease columns change (an upgrade above wrote its own), and the head stays
        // the head: its lane is due when the lease expires.
        try store.markLeased(row.id, until: row.leaseExpiresAt!, sends: row.sends, now: now)
        if try !store.setLaneDue(workspace: row.workspace, lane: row.lane, head: row.id, due: row.leaseExpiresAt!) {
            try store.refreshLane(workspace: row.workspace, lane: row.lane)
        }
        return Lease(
            itemID: row.id, attemptID: row.attemptID, attempt: row.attempts + 1,
            request: OutboundRequest(
                itemID: ItemID(row.id), documentID: row.documentID, attemptID: row.attemptID, workspace: row.workspace,
                principal: row.principal, capturedAt: row.createdAt > 0 ? Date(millisecondsSince1970: row.createdAt) : nil, body: body),
            namesPendingFiles: namesPending)
    }

    /// A lease is over when its time has passed, or when it ends further ahead than a lease can
    /// last (the clock jumped back since it was taken).
    func leaseExpired(_ expiry: Int64?, now: Int64) -> Bool {
        guard let expiry else { return true }
        return expiry <= now || expiry > now.addingClamped(configuration.longestLeaseMilliseconds)
    }
}
