import FormSyncModel
import Foundation

extension Outbox {
    /// Opens (or creates) an outbox from async code, off the caller's thread: an open reads the
    /// database, may migrate it, reclaims leases and fsyncs its log, and none of that may block
    /// a thread of Swift's cooperative pool. Otherwise the same as
    /// `init(path:forms:records:transport:configuration:environment:refreshAuthentication:)`,
    /// which blocks its caller (fine on the main thread at launch).
    public static func open(
        path: String, forms: [any FormPayload.Type], records: [any SyncRecord.Type] = [], transport: any OutboxTransport,
        configuration: Configuration = Configuration(), environment: OutboxEnvironment = .live,
        refreshAuthentication: @escaping @Sendable () async -> Bool = { false }
    ) async throws -> Outbox {
        let workspace = transport.workspace
        return try await open(
            path: path, workspace: workspace, registry: FormRegistry(forms), records: RecordRegistry(records),
            transports: { $0 == workspace ? transport : nil }, configuration: configuration, environment: environment,
            refreshAuthentication: refreshAuthentication)
    }

    /// `open` for an outbox over several workspaces' transports, or over registries (see
    /// `init(path:workspace:registry:records:transports:configuration:environment:refreshAuthentication:)`).
    public static func open(
        path: String, workspace: String, registry: FormRegistry, records: RecordRegistry,
        transports: @escaping @Sendable (String) -> (any OutboxTransport)?,
        configuration: Configuration = Configuration(), environment: OutboxEnvironment = .live,
        refreshAuthentication: @escaping @Sendable () async -> Bool = { false }
    ) async throws -> Outbox {
        try await withCheckedThrowingContinuation { continuation in
            openQueue.async {
                continuation.resume(
                    with: Result {
                        try Outbox(
                            path: path, workspace: workspace, registry: registry, records: records, transports: transports,
                            configuration: configuration, environment: environment, refreshAuthentication: refreshAuthentication)
                    })
            }
        }
    }

    /// Where `open` opens: a serial queue of its own (a thread of its own, never one of the
    /// cooperative pool's); opens are rare, and one at a time.
    package static let openQueue: DispatchQueue = {
        let queue = DispatchQueue(label: "formsync.outbox-open", qos: .userInitiated)
        queue.setSpecific(key: openQueueKey, value: true)
        return queue
    }()

    /// Set on `openQueue`'s threads (tests check where an open ran).
    package static let openQueueKey = DispatchSpecificKey<Bool>()
}
