import FormSyncProtocol
import Foundation

extension Outbox {
    // MARK: Support bundles

    /// What support needs to know of this device's queue (`SupportBundle`): counts per state,
    /// every item that needs a person and the newest others with their reasons and attempt
    /// history, people, the revocation, versions (`Configuration.supportDevice`) and settings.
    /// No token and no file bytes; payloads only when `Configuration.supportBundlePayloads`.
    public func supportBundle(answering request: Int64? = nil) throws -> SupportBundle {
        let settings = [
            "concurrency": String(configuration.concurrency), "upload_concurrency": String(configuration.uploadConcurrency),
            "max_attempts": String(configuration.retry.maxAttempts), "lease_ms": String(configuration.leaseMilliseconds),
            "attachment_cache_bytes": String(configuration.attachmentCacheBytes),
            "current_workspace": workspace, "current_principal": lifecycle.principal ?? "",
        ]
        return try storage {
            try SupportBundleBuilder(
                store: store, state: lifecycle.publicState, countedAs: { [lifecycle] in lifecycle.publicState(id: 0, $0) }
            ).bundle(
                device: configuration.supportDevice, answering: request, includePayloads: configuration.supportBundlePayloads,
                settings: settings, now: Date(millisecondsSince1970: environment.now()))
        }
    }

    /// Sends this device's support bundle to the server (a "send to support" button, or the
    /// answer to a request the back office made, which `pull` sends by itself), under the
    /// current person's credential. A bundle larger than the protocol allows
    /// (`SupportBundle.maxBytes`) loses its oldest items until it fits.
    public func sendSupportBundle(answering request: Int64? = nil) async -> BackOfficeReply<SupportBundleReceipt> {
        guard lifecycle.revocationReason == nil else { return .refused(code: .deviceRevoked, detail: "this device was revoked") }
        guard let bundle = try? supportBundle(answering: request) else {
            return .unreachable(reason: "the outbox's database could not be read")
        }
        return await transport.sendSupportBundle(Self.fitting(bundle, within: SupportBundle.maxBytes), as: lifecycle.principal)
    }

    /// `bundle` without its oldest items, as many as it takes for its JSON to be at most
    /// `maxBytes` (a quarter of what is left at a time, so that a huge bundle is cut in a few
    /// encodings).
    static func fitting(_ bundle: SupportBundle, within maxBytes: Int) -> SupportBundle {
        var bundle = bundle
        let encoder = JSONEncoder()
        while let size = try? encoder.encode(bundle).count, size > maxBytes, !bundle.items.isEmpty {
            bundle.items.removeFirst(max(1, bundle.items.count / 4))
        }
        return bundle
    }
}
