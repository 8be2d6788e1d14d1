import FieldAppForms
import FormSyncClient
import FormSyncModel
import FormSyncProtocol
import Foundation

// A field app's day in forty lines: enrol, pull the round, capture a visit with a photo and a
// trap reading offline, and sync. Usage: FieldApp --link LINK --db PATH (LINK: the enrolment
// link an operator shows, as `formsync serve` and `formsync devices --enrol` print it)

let arguments = CommandLine.arguments
func value(_ name: String) -> String? { arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil } }
guard let link = value("--link").flatMap(EnrolmentLink.init(parsing:)), let server = URL(string: link.server), let db = value("--db") else {
    print("usage: FieldApp --link LINK --db PATH")
    exit(2)
}

// The device's own credentials: enrolled once, the refresh token kept in a vault (rotated at
// every refresh), the access token asked for at send time and never stored in the outbox.
let credentials = try await DeviceCredentials(vault: FileCredentialVault(path: db + ".credentials"), device: DeviceReport(name: "FieldApp"))
if await credentials.status == .notEnrolled { try await credentials.enrol(link, installation: "fieldapp-" + UUID().uuidString) }
let transport = HTTPTransport(workspace: link.workspace, baseURL: server) { await credentials.accessToken() }
let outbox = try Outbox(
    path: db, forms: FormCatalog.forms, records: FormCatalog.records, transport: transport,
    refreshAuthentication: { await credentials.refresh() })

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
