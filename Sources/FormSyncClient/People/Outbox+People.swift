import FormSyncProtocol
import Foundation

extension Outbox {
    // MARK: People on a shared phone

    /// Signs `principal` in on this device: their credential is here (the transport answers
    /// `tokenFor: principal`), so their queued items go out, each under their own credential.
    /// When `current`, they capture from now on, and see only their own records and items: a
    /// person switched back to finds their records as they left them, with nothing pulled again.
    /// Works offline; durable before it returns.
    public func signIn(_ principal: String, current: Bool = true) throws {
        try Self.check(principal)
        try write(.full) { try store.signIn(principal, current: current) }
        lifecycle.present.insert(principal)
        lifecycle.peopleKnown = true
        lifecycle.revokedPeople[principal] = nil
        if current { lifecycle.principal = principal }
        try refreshLanes(headedBy: principal)
        lifecycle.networkDown = false
        emitSnapshot(changed: nil)
        signalWork()
    }

    /// Signs `principal` out: their credential left the device. Their queued items stay, and
    /// wait (`SyncState.waitingForItsOwner`) until they sign in again or a person hands them
    /// over; nothing of theirs goes out under anyone else's credential. Their pulled records
    /// stay too, for when they come back (`RecordStore.forgetPulledRecords` while signed in
    /// removes them). Nobody is current after the current person signs out.
    public func signOut(_ principal: String) throws {
        try Self.check(principal)
        try write(.full) { try store.signOut(principal) }
        lifecycle.present.remove(principal)
        if lifecycle.principal == principal { lifecycle.principal = nil }
        try refreshLanes(headedBy: principal)
        emitSnapshot(changed: nil)
    }

    /// The person capturing now (nil: nobody is signed in).
    public var currentPrincipal: String? { lifecycle.principal }

    /// The people signed in now: their items may go out.
    public var signedIn: Set<String> { lifecycle.present }

    /// The people whose credential the server revoked on this phone (`personRevoked`), until
    /// they sign in again with a new one.
    public var revokedPrincipals: Set<String> { Set(lifecycle.revokedPeople.keys) }

    /// Items of the current workspace whose owner is not signed in, whoever owns them, oldest
    /// first: what a hand-over screen lists ("three deliveries of Ana's wait for her").
    public func itemsWaitingForTheirOwners() throws -> [OutboxItem] {
        let rows = try storage { try store.items(workspace: workspace, states: [.pending]) }
        return rows.filter(lifecycle.waitsForItsOwner).map(lifecycle.publicItem)
    }

    /// Hands item `id` to `principal`, as the current person's act (recorded with the item,
    /// `handovers(of:)`): it goes out under `principal`'s credential from now on, and shows in
    /// their items and records. The files it carries that have not landed and had the same
    /// owner go with it. Refused while nobody is signed in, and for an item on the wire or
    /// already landed.
    public func handOver(_ id: ItemID, to principal: String) throws {
        try Self.check(principal)
        guard let by = lifecycle.principal else { throw OutboxError.nobodySignedIn }
        let now = environment.now()
        try write(.full) {
            guard let row = try store.item(id.rawValue) else { throw OutboxError.noSuchItem(id) }
            guard row.workspace == workspace else {
                throw OutboxError.otherWorkspace(id: id, itemWorkspace: row.workspace, current: workspace)
            }
            guard row.state != .leased, row.state != .confirmed, row.state != .sealed else {
                throw OutboxError.notAllowed(id: id, state: lifecycle.publicState(row), action: "hand over")
            }
            var handed = [row]
            for file in try store.unlandedProducers(of: row.id) where file.principal == row.principal && file.state != .leased {
                handed.append(file)
            }
            for item in handed where item.principal != principal {
                try store.setOwner(item: item.id, principal: principal)
                try store.recordHandover(item: item.id, from: item.principal, to: principal, by: by, at: now)
                try store.refreshLane(workspace: item.workspace, lane: item.lane)
            }
        }
        try lifecycle.reloadCounts()
        emitSnapshot(changed: nil)
        signalWork()
    }

    /// Every hand-over of item `id`, oldest first.
    public func handovers(of id: ItemID) throws -> [Handover] {
        try storage { try store.handovers(of: id.rawValue) }.map {
            Handover(from: $0.from, to: $0.to, by: $0.by, at: Date(millisecondsSince1970: $0.at))
        }
    }

    /// The server revoked one person's credential on this shared phone (their
    /// `DeviceCredentials.onRevocation`): they are signed out, every item of theirs that had
    /// not gone out is sealed (kept for support, never sent under any credential, as
    /// `deviceRevoked` does for the whole device), and what `purge` names of theirs is removed.
    /// The other people on the phone go on working. Returns how many items it sealed.
    @discardableResult
    public func personRevoked(_ principal: String, reason: String, purge: RevocationPurge = .all) throws -> Int {
        try Self.check(principal)
        let now = environment.now()
        let reason = Self.revocationReason(reason)
        try write(.full) { try store.revoke(principal, reason: reason) }
        lifecycle.present.remove(principal)
        lifecycle.revokedPeople[principal] = reason
        let sealed = try sealRevokedPeoplesItems(now: now)
        if lifecycle.principal == principal { lifecycle.principal = nil }
        try remove(purge) { PersonalView(key: $0).principal == principal }
        observers.emit(.personRevoked(principal: principal, reason: reason, sealed: sealed))
        emitSnapshot(changed: nil)
        return sealed
    }

    /// Seals every item of a revoked person that has not gone out (pending, parked, or back
    /// from the wire since the revocation), durably; how many. Nothing to do on a phone where
    /// nobody was revoked.
    @discardableResult
    func sealRevokedPeoplesItems(now: Int64) throws -> Int {
        guard !lifecycle.revokedPeople.isEmpty else { return 0 }
        let revoked = lifecycle.revokedPeople
        let sealed = try write(.full) {
            try revoked.reduce(0) { total, person in
                total
                    + (try store.sealItems(
                        ownedBy: person.key, reason: "sealed: \(person.key)'s credential was revoked: \(person.value)", now: now))
            }
        }
        if sealed > 0 { try lifecycle.reloadCounts() }
        return sealed
    }

    /// Looks again at the lanes `principal`'s items head: due when they are signed in, waiting
    /// when not.
    private func refreshLanes(headedBy principal: String) throws {
        try write(.normal) {
            for (workspace, lane) in try store.lanes(headedBy: principal) { try store.refreshLane(workspace: workspace, lane: lane) }
        }
    }

    /// A person's name as the server grants it (`CredentialRules.isPrincipal`: 1 to 128 bytes on
    /// one line, no control character, which also keeps `PersonalView`'s separator out).
    static func check(_ principal: String) throws {
        guard CredentialRules.isPrincipal(principal) else { throw OutboxError.invalidPrincipal(principal) }
    }
}
