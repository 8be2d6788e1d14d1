import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// What every part of the server shares: its store, the forms and record types it holds, its
/// clock, the workspace it hosts, its token rules, its faults and its settings. Each part
/// (`AccessControl`, `IdempotencyLedger`, `SubmissionService`, `FileService`, `UploadService`,
/// `RecordService`, `ChangeFeed`, `ServerRouter`) is a value over one context, so that a part
/// holds no state of its own and any of them can be made where it is needed.
struct ServerContext: Sendable {
    let store: any ServerStore
    let registry: FormRegistry
    let recordTypes: RecordRegistry
    let now: @Sendable () -> Int64
    /// The one workspace this server hosts; nil accepts any.
    let workspace: String?
    let tokenLifetimeMilliseconds: Int64
    let accessTokens: AccessTokenCache
    let faults: FaultPlan
    let settings: ServerSettings
    /// When this node last wrote each device's sighting.
    let sightings = DeviceSightings()
}

/// A part of the server: it reads everything through its `context`.
protocol ServerPart {
    var context: ServerContext { get }
}

extension ServerPart {
    var store: any ServerStore { context.store }
    var registry: FormRegistry { context.registry }
    var recordTypes: RecordRegistry { context.recordTypes }
    var now: @Sendable () -> Int64 { context.now }
    var faults: FaultPlan { context.faults }
    var settings: ServerSettings { context.settings }

    var access: AccessControl { AccessControl(context: context) }
    var files: FileService { FileService(context: context) }
    var records: RecordService { RecordService(context: context) }
    var lists: ListRecordService { ListRecordService(context: context) }
    var versions: VersionWriter { VersionWriter(context: context) }

    /// Runs `body` as one unit of work on the store (see `ServerStore.exclusive`).
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        try store.exclusive(body)
    }

    /// The reply to a request that failed with `error`: `503` when the store cannot answer now
    /// (retried by the client), `500` otherwise; either way the details (paths, SQL) go to
    /// the server's log under a reference, never to the client.
    func failure(_ error: any Error, _ what: String = "error") -> HTTPResponse {
        let reference = UUID().uuidString.lowercased()
        FileHandle.standardError.write(Data("formsync server: \(what) \(reference): \(error)\n".utf8))
        if store.isUnavailable(error) { return Self.storeUnavailable() }
        return .problem(.internal, detail: "an internal error occurred (reference \(reference))")
    }

    /// The store could not answer (its database is down or restarting): transient, retried.
    static func storeUnavailable() -> HTTPResponse {
        .problem(.busy, detail: "the server's database is not available; retry", headers: [("Retry-After", "1")])
    }

    /// The caller of `request`, or the reply that refuses it (see `AccessControl.caller(of:)`).
    func caller(of request: HTTPRequest) -> CallerCheck {
        access.caller(of: request)
    }
}
