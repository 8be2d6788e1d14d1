import Foundation

extension Outbox {
    /// What goes from the device when the server revokes it: the app's policy. Queued work
    /// that had not gone out is never removed: it is sealed, kept for support.
    public struct RevocationPurge: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// The pulled records of every workspace and person, the feed's cursors, and the back
        /// office's reviews (their words).
        public static let records = RevocationPurge(rawValue: 1)
        /// The copies of server files fetched to the device (`file(for:)`).
        public static let attachmentCache = RevocationPurge(rawValue: 2)
        public static let all: RevocationPurge = [.records, .attachmentCache]
    }

    /// The server revoked this device's credentials (`DeviceCredentials.onRevocation`, or a
    /// `401 device-revoked` the app read itself): from now on nothing is sent or pulled, every
    /// item that had not gone out is sealed (`SyncState.sealed`: kept with its payload and
    /// files, readable by `items(in:)` and `formsync outbox inspect`, never sent under any
    /// credential), and what `purge` names is removed. Durable before it returns; calling it
    /// again changes nothing. Returns how many items it sealed.
    @discardableResult
    public func deviceRevoked(reason: String, purge: RevocationPurge = .all) throws -> Int {
        let now = environment.now()
        let bounded = Self.revocationReason(reason)
        try write(.full) { try store.setRevocation(reason: bounded, at: now) }
        lifecycle.revocationReason = try storage { try store.revocation()?.reason } ?? bounded
        let sealed = try sealUnsent()
        try remove(purge) { _ in true }
        observers.emit(.revoked(reason: lifecycle.revocationReason ?? bounded, sealed: sealed))
        emitSnapshot(changed: nil)
        return sealed
    }

    /// A revocation's reason as the outbox keeps it: one line of at most 200 characters
    /// ("revoked" when nothing of it is left).
    static func revocationReason(_ reason: String) -> String {
        let bounded = String(reason.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(200).map(Character.init))
        return bounded.isEmpty ? "revoked" : bounded
    }

    /// Removes what `purge` names of the views (`PersonalView.key`) `include` selects: their
    /// pulled records and feed cursors, their cached files.
    func remove(_ purge: RevocationPurge, of include: (String) -> Bool) throws {
        if purge.contains(.records) {
            try write(.full) {
                for view in try store.recordViews() where include(view) {
                    try store.clearRecords(view: view)
                    try store.clearReviews(view: view)
                }
            }
        }
        if purge.contains(.attachmentCache) {
            let (files, _) = try storage { try store.cachedFiles() }
            for file in files where include(file.view) {
                try write(.normal) { try store.removeCachedFile(view: file.view, id: file.id) }
                attachments.remove(file.id, view: file.view)
            }
        }
    }

    /// When the server revoked this device and why; nil while it has not.
    public var revocation: (reason: String, at: Date)? {
        guard let found = try? storage({ try store.revocation() }) else { return nil }
        return (found.reason, Date(millisecondsSince1970: found.at))
    }

    /// The device was enrolled again (a new credential): new captures go out again. What was
    /// sealed stays sealed: it is never sent under another credential.
    public func clearRevocation() throws {
        try write(.full) { try store.clearRevocation() }
        lifecycle.revocationReason = nil
        signalWork()
    }

    /// Seals what has not gone out, durably; how many.
    @discardableResult
    func sealUnsent() throws -> Int {
        let now = environment.now()
        let sealed = try write(.full) { try lifecycle.sealUnsent(now: now) }
        try lifecycle.reloadCounts()
        return sealed
    }

    /// The report of a flush refused because the device is revoked (sealing what was handed
    /// back or captured since).
    func revokedReport(_ reason: String) -> FlushReport {
        _ = try? sealUnsent()
        var report = FlushReport()
        report.deviceRevoked = reason
        report.remaining = lifecycle.remainingCount()
        return report
    }
}
