import FieldForms
import FormSyncClient
import FormSyncTesting
import Foundation
import Testing

/// Issue 32, 5: one way to make bytes durable on every platform. Every sync of the shipping
/// modules goes through `DurableSync` (`F_FULLFSYNC` on Apple platforms, where a plain `fsync`
/// may leave the data in the drive's cache), and every data-protection class opens an outbox.
struct DurableSyncTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func noShippingModuleCallsFsyncExceptThroughDurableSync() async throws {
        try await OffThePool.compute {
            var offenders: [String] = []
            var scanned = 0
            for module in ["FormSyncSQLite", "FormSyncClient", "FormSyncServer"] {
                let folder = Self.root.appendingPathComponent("Sources/\(module)")
                for case let name as String in FileManager.default.enumerator(atPath: folder.path) ?? NSEnumerator()
                where name.hasSuffix(".swift") {
                    guard name != "DurableSync.swift" else { continue }
                    scanned += 1
                    let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
                    for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                        let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                        if code.contains("fsync(") || code.contains("fdatasync(") || code.contains("F_FULLFSYNC") {
                            offenders.append("\(module)/\(name):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                        }
                    }
                }
            }
            #expect(scanned > 40)
            #expect(offenders.isEmpty, "\(offenders.joined(separator: "\n"))")
        }
    }

    @Test(arguments: FileProtection.allCases)
    func everyProtectionClassOpensAnOutboxAndSaves(_ protection: FileProtection) async throws {
        let h = try Harness()
        h.configuration.fileProtection = protection
        let outbox = try h.open()
        try await outbox.enqueue(order(7))
        #expect(await outbox.stateCounts()[.savedOnDevice] == 1)
        #expect(Outbox.Configuration().fileProtection == .completeUntilFirstUserAuthentication, "the engine must run in the background")
    }
}
