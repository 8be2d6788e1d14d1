import Foundation
import Testing

/// Examples/FieldApp, an app package that depends on FormSync by path with specs of its own:
/// it builds (its tests too, with FormSyncTesting), and its binary runs a field day against
/// `formsync serve --specs` serving the app's specs: a scoped pull, a visit with a photo, an
/// edit of a pulled record, all sent.
struct ExampleAppTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theExampleAppBuildsAndSyncsAgainstServeSpecs() async throws {
        let app = Self.root.appendingPathComponent("Examples/FieldApp")
        let build = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["swift", "build", "--build-tests", "--package-path", app.path])
        try #require(build.status == 0, "the example app does not build:\n\(build.output.suffix(3000))\n\(build.errors.suffix(3000))")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fieldapp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let seed = folder.appendingPathComponent("seed.json")
        try Data(#"""
            [{"type":"Trap","workspace":"pest","record":{"technician":"tech-1","site":"LIS-001","status":"active","bait_level":80}},
             {"type":"Trap","workspace":"pest","record":{"technician":"tech-2","site":"LIS-002","status":"active"}}]
            """#.utf8).write(to: seed)
        let server = Process()
        server.executableURL = DemoProcessTests.formsync
        server.arguments = [
            "serve", "--port", "0", "--db", folder.appendingPathComponent("db").path, "--specs", app.appendingPathComponent("Specs").path,
            "--records", seed.path, "--principal", "tech-1",
        ]
        let banner = Pipe()
        server.standardOutput = banner
        try server.run()
        defer { server.terminate() }
        let text = await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            Thread.detachNewThread {
                var text = ""
                while !text.contains("access token:") {
                    let chunk = banner.fileHandleForReading.availableData
                    guard !chunk.isEmpty else { break }
                    text += String(decoding: chunk, as: UTF8.self)
                }
                continuation.resume(returning: text)
            }
        }
        let lines = text.split(separator: "\n")
        let url = try #require(lines.first { $0.hasPrefix("FormSync reference server on ") }?.split(separator: " ").last.map(String.init))
        let refresh = try #require(lines.first { $0.hasPrefix("refresh token:") }?.split(separator: " ").last.map(String.init))
        #expect(text.contains("forms: PestControlVisit v1, TrapCheck v1"))

        let binary = app.appendingPathComponent(".build/debug/FieldApp")
        let run = try await ProcessRunner.run(binary, ["--server", url, "--refresh-token", refresh, "--db", folder.appendingPathComponent("app.sqlite").path])
        #expect(run.status == 0, "\(run.output)\n\(run.errors)")
        #expect(run.output.contains("pulled 1 records; 1 active traps"))  // tech-2's trap stays on the server
        #expect(run.output.contains("sent 3, parked 0; trap now at 20%"))
    }
}
