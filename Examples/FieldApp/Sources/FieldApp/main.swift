import FieldAppForms
import FormSyncClient
import FormSyncModel
import Foundation
import Synchronization

// A field app's day in forty lines: sign in, pull the round, capture a visit with a photo and
// a trap reading offline, and sync. Usage: FieldApp --server URL --refresh-token TOKEN --db PATH

let arguments = CommandLine.arguments
func value(_ name: String) -> String? { arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil } }
guard let server = value("--server").flatMap(URL.init(string:)), let refreshToken = value("--refresh-token"), let db = value("--db") else {
    print("usage: FieldApp --server URL --refresh-token TOKEN --db PATH")
    exit(2)
}

// Tokens are asked for at send time and never stored in the outbox.
let token = Mutex<String?>(nil)
let transport = HTTPTransport(workspace: "pest", baseURL: server) { token.withLock { $0 } }
let outbox = try Outbox(
    path: db, forms: FormCatalog.forms, records: FormCatalog.records, transport: transport,
    refreshAuthentication: {
        let fresh = await transport.refreshAccessToken(refreshToken: refreshToken)
        token.withLock { $0 = fresh }
        return fresh != nil
    })

// At the depot: pull the round (the traps assigned to this technician).
let pulled = try await outbox.pull()
let traps = try await outbox.records(Trap.byStatus(.active))
print("pulled \(pulled.upserted) records; \(traps.count) active traps")

// On site, offline: a visit with a photo, and a reading of the first trap.
let photoFile = FileManager.default.temporaryDirectory.appendingPathComponent("evidence-\(UUID().uuidString).jpg")
// A JPEG's first bytes: the type is read from them.
try (Data([0xFF, 0xD8, 0xFF, 0xE0]) + Data(repeating: 0, count: 20_000)).write(to: photoFile)
let photo = outbox.placeholderIDs.next()
let visit = PestControlVisit(
    site: traps.first?.site ?? "LIS-001", rodentsSeen: true, evidence: FileRef(id: photo, contentType: "image/jpeg"))
try await outbox.enqueue(visit, attachments: [.init(placeholder: photo, source: photoFile, contentType: "image/jpeg")])
if let trap = traps.first {
    try await outbox.edit(TrapCheck.self, id: trap.id) {
        $0.baitLevel = 20
        $0.note = "refilled"
    }
}

// Back in coverage: push, then pull.
let report = await outbox.flush()
_ = try await outbox.pull()
var refreshed: Trap?
if let trap = traps.first { refreshed = try await outbox.record(Trap.self, id: trap.id) }
print(
    "sent \(report.sent), parked \(report.rejected + report.conflicts + report.exhausted); trap now at \(refreshed?.baitLevel.map(String.init) ?? "-")%"
)
exit(report.remaining == 0 && report.rejected == 0 && report.conflicts == 0 && refreshed?.baitLevel == 20 ? 0 : 1)
