import FieldForms
import FieldFormsUpdate
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
import FormSyncProtocol
import Foundation
import Synchronization

/// `formsync demo-device`: one worker's device during the demo, run as its own process so the
/// demo can kill it mid-flush. It starts a sync engine on its outbox, as an app would, and exits
/// once nothing is left to send. `--clock-skew-ms` shifts its clock (a device whose clock was
/// ahead during capture and has since been corrected). `--pull-only` only pulls the device's
/// records until it has caught up (crash tests kill it mid-pull). `--resumable-from` and
/// `--chunk-bytes` set the transport's resumable uploads (tests kill it mid-upload). With
/// `--vault` it is an enrolled device: its credentials (`DeviceCredentials`) rotate in that file,
/// and a revocation seals what it had not sent and stops it.
enum DemoDeviceCommand {
    static let help = """
        usage: formsync demo-device --db PATH --server URL (--refresh-token T | --vault FILE) [--workspace W]
                                    [--timeout S] [--lease-ms MS] [--clock-skew-ms MS] [--deadline S]
                                    [--page-size N] [--resumable-from BYTES] [--chunk-bytes BYTES]
                                    [--pull-only] [--next-build]
                                    [--draft ID --draft-document DOC --draft-photos PATH,PATH]

        One device of `formsync demo`, started by it (and by crash tests) as its own process:
        syncs the outbox at PATH with the server until nothing is left to send (or, with
        --pull-only, until its records have caught up), then exits 0. --vault FILE: the
        enrolled device's credential vault (FileCredentialVault), whose refresh token rotates;
        a device revoked meanwhile seals its unsent items and exits 3. --draft ID: a courier
        half-way through a delivery confirmation: saves draft ID (document DOC) for its first
        delivery with the photos attached, prints "draft saved", and waits to be killed.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(
            raw,
            options: [
                "--db", "--server", "--refresh-token", "--timeout", "--lease-ms", "--clock-skew-ms", "--workspace", "--page-size",
                "--resumable-from", "--chunk-bytes", "--deadline", "--vault", "--draft", "--draft-document", "--draft-photos",
            ],
            flags: ["--pull-only", "--next-build", "--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        let workspace = args.values["--workspace"] ?? "demo"
        let pageSize = try args.integer("--page-size", default: 5_000, in: 1...10_000)
        let timeout = try args.integer("--timeout", default: 3, in: 1...600)
        let lease = try args.integer("--lease-ms", default: 8000, in: 1000...86_400_000)
        let skew = Int64(try args.integer("--clock-skew-ms", default: 0, in: -31_536_000_000...31_536_000_000))
        guard timeout >= 1, lease > timeout * 1000 else { throw UsageError("--lease-ms must exceed --timeout (seconds, at least 1)") }
        guard abs(skew) <= 365 * 86_400_000 else { throw UsageError("--clock-skew-ms must be within a year") }
        guard let db = args.values["--db"], let server = args.values["--server"].flatMap(URL.init(string:)),
            (args.values["--refresh-token"] == nil) != (args.values["--vault"] == nil)
        else { throw UsageError("demo-device needs --db, --server and one of --refresh-token and --vault") }
        let token = Mutex<String?>(nil)
        let refreshToken = args.values["--refresh-token"]
        let credentials: DeviceCredentials? =
            if let vault = args.values["--vault"] {
                try await DeviceCredentials(vault: FileCredentialVault(path: vault), device: DeviceReport(name: "demo device"))
            } else {
                nil
            }
        let resumableFrom = try args.integer("--resumable-from", default: 8 << 20, in: 1...(4 << 30))
        let seconds = Double(try args.integer("--deadline", default: 55, in: 1...86_400))
        let chunkBytes = try args.integer("--chunk-bytes", default: 4 << 20, in: (64 << 10)...(64 << 20))
        let transport = HTTPTransport(
            workspace: workspace, baseURL: server, timeout: .seconds(timeout), maxConnections: 3,
            resumableFromBytes: Int64(resumableFrom), chunkBytes: chunkBytes
        ) {
            if let credentials { return await credentials.accessToken() }
            return token.withLock { $0 }
        }
        let live = OutboxEnvironment.live
        let environment = OutboxEnvironment(now: { live.now() + skew }, random: live.random, newID: live.newID)
        // `--next-build`: the app was updated and runs the next version of the specs.
        let registry = args.flags.contains("--next-build") ? try AppUpdate.nextBuild() : FormRegistry(FormCatalog.forms)
        let outbox = try Outbox(
            path: db, workspace: workspace, registry: registry, records: RecordRegistry(FormCatalog.records),
            transports: { $0 == workspace ? transport : nil },
            configuration: Outbox.Configuration(
                concurrency: 3,
                retry: RetryPolicy(
                    baseDelay: .milliseconds(200), maxDelay: .milliseconds(2000), maxAttempts: 60, maxRetryAfter: .milliseconds(5000)),
                lease: .milliseconds(lease)),
            environment: environment,
            refreshAuthentication: {
                if let credentials { return await credentials.refresh() }
                guard let refreshToken, let fresh = await transport.refreshAccessToken(refreshToken: refreshToken) else { return false }
                token.withLock { $0 = fresh }
                return true
            })
        if let draft = args.values["--draft"] {
            return try await fillDraft(
                outbox, id: DraftID(rawValue: draft), document: args.values["--draft-document"],
                photos: (args.values["--draft-photos"] ?? "").split(separator: ",").map(String.init), seconds: seconds)
        }
        // A device the server revoked keeps what it had not sent, sealed, and stops.
        await credentials?.onRevocation { reason in _ = try? await outbox.deviceRevoked(reason: reason, purge: .records) }
        if args.flags.contains("--pull-only") {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                let report = try await outbox.pull(pageSize: pageSize)
                printNow("pulled \(report.pages) pages: \(report.upserted) upserted, \(report.deleted) deleted")
                if report.caughtUp {
                    // (Not a count of the stored records: that reads every one of them, and a
                    // benchmark timing this process would time it too.)
                    printNow("caught up")
                    return 0
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            return 1
        }
        let engine = SyncEngine(
            outbox: outbox,
            configuration: SyncEngine.Configuration(
                networkBackoff: RetryPolicy(baseDelay: .milliseconds(250), maxDelay: .milliseconds(1000))),
            environment: environment)
        let running = Task { await engine.run() }
        let states = Task {
            for await state in engine.states() { printNow("engine: \(state)") }
        }
        defer {
            engine.stop()
            running.cancel()
            states.cancel()
        }
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
            if let revoked = await outbox.revocation {
                printNow("revoked: \(revoked.reason); \(try await outbox.items(in: [.sealed]).count) items sealed")
                return 3
            }
            let counts = await outbox.stateCounts()
            let open = [SyncState.savedOnDevice, .waitingForNetwork, .sending, .sent].reduce(0) { $0 + (counts[$1] ?? 0) }
            if open == 0 {
                printNow("drained: \(engine.lastReport.map(String.init(describing:)) ?? "no pass")")
                // Back at the depot: one last pull, so the device holds what the server holds.
                while Date() < deadline {
                    let report = try await outbox.pull()
                    if report.caughtUp {
                        printNow("pulled: caught up with \(try await outbox.storedRecordCount()) records")
                        return 0
                    }
                    printNow("pull stopped: \(report.stoppedBecause.map(String.init(describing:)) ?? "?")")
                    try await Task.sleep(for: .milliseconds(200))
                }
                return 1
            }
        }
        return 1
    }

    /// The placeholders of a draft's photos: fixed, so the demo's seed makes the same payload.
    static let draftPhotoPlaceholder: Int64 = -9_000_000_000_000_000

    /// Fills the delivery confirmation of the device's first delivery as a draft, with its
    /// photos, then waits for the demo to kill it.
    static func fillDraft(_ outbox: Outbox, id: DraftID, document: String?, photos: [String], seconds: Double) async throws -> Int32 {
        guard let delivery = try await outbox.records(Delivery.all).min(by: { $0.id < $1.id }) else {
            throw UsageError("the device holds no delivery to confirm")
        }
        var form = DeliveryConfirmation(deliveryId: EntityRef(delivery.id), outcome: .delivered)
        _ = try await outbox.saveDraft(form, id: id, documentID: document)
        var refs: [FileRef] = []
        for (n, path) in photos.enumerated() {
            let placeholder = draftPhotoPlaceholder - Int64(n)
            try await outbox.attach(URL(fileURLWithPath: path), to: id, placeholder: placeholder, contentType: "image/jpeg")
            refs.append(FileRef(id: placeholder, contentType: "image/jpeg"))
            form.proofPhotos = refs
            _ = try await outbox.saveDraft(form, id: id)
        }
        printNow("draft saved: \(refs.count) photos")
        try await Task.sleep(for: .seconds(seconds))
        return 0
    }
}
