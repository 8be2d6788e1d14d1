import FormSyncTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The rough edges a newcomer hit with the tools (issue 35), each as the newcomer met it.
struct RoughEdgeTests {
    static let root = CommandLineTests.root

    @Test(arguments: [DemoProcessTests.formsync, DemoProcessTests.lab])
    func theTopLevelHelpKeepsEveryCommandNameApartFromItsSummary(_ binary: URL) async throws {
        let help = try await ProcessRunner.run(binary, ["--help"])
        #expect(help.status == 0)
        let lines = help.output.split(separator: "\n").drop { $0 != "commands:" }.dropFirst()
        #expect(lines.count >= 2)
        let columns = Set(
            lines.map { line in line.dropFirst(2).firstIndex(of: " ").map { line.distance(from: line.startIndex, to: $0) } ?? -1 })
        for line in lines {
            let name = line.dropFirst(2).prefix { $0 != " " }
            #expect(
                [
                    "check", "generate", "diff", "schema", "openapi", "preview", "serve", "devices", "export", "conformance", "outbox",
                    "demo",
                    "bench",
                    "torture",
                ]
                .contains(
                    String(name)), "\(line)")
        }
        // Every summary starts in the same column, two spaces at least after the longest name.
        let starts = Set(
            lines.map { line -> Int in
                let afterName = line.dropFirst(2).drop { $0 != " " }
                return line.count - afterName.drop { $0 == " " }.count
            })
        #expect(starts.count == 1, "\(lines)")
        #expect(!columns.contains(-1))
    }

    @Test func demoDeviceHelpIsUsageTextAndAMistakeIsAUsageError() async throws {
        let help = try await ProcessRunner.run(DemoProcessTests.formsync, ["demo-device", "--help"])
        #expect(help.status == 0)
        #expect(help.output.hasPrefix("usage: formsync demo-device"))
        let wrong = try await ProcessRunner.run(DemoProcessTests.formsync, ["demo-device", "--bogus"])
        #expect(wrong.status == 2)
        #expect(wrong.errors == "formsync demo-device: unknown option '--bogus' (see formsync demo-device --help)\n")
        #expect(!wrong.errors.contains("UsageError("))
    }

    @Test func generateIntoAFolderItCannotWriteSaysWhereAndWhyInWords() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-folder-\(UUID().uuidString)")
        try Data().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await ProcessRunner.run(
            DemoProcessTests.formsync, ["generate", "FormSpecs", "--output", file.path + "/Generated"], in: Self.root)
        #expect(run.status == 1)
        #expect(run.errors.contains("cannot write \(file.path)/Generated: Not a directory"), "\(run.errors)")
        #expect(!run.errors.contains("NSCocoaErrorDomain") && !run.errors.contains("Error Domain"))
    }

    @Test func aReferenceToNoRecordIsReportedWithTheSpecsOtherErrorsAndSaysHowToFixIt() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("to-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(
            "form: Visit\nversion: 1\nendpoint: /visits\nfields:\n  site: { type: reference, to: Site }\n  note: { type: text, max_length: -5 }\n"
                .utf8
        )
        .write(to: folder.appendingPathComponent("Visit.yaml"))
        let run = try await ProcessRunner.run(DemoProcessTests.formsync, ["check", folder.path])
        #expect(run.status == 1)
        #expect(
            run.errors.contains(
                "Visit.yaml:5:32: error: reference 'site' points to 'Site', which no record spec declares; add a record spec for it (a file starting 'record: Site') beside this one"
            ), "\(run.errors)")
        #expect(run.errors.contains("Visit.yaml:6:35: error: max_length must be 1 or more"))
        // A record spec that is there but broken is its own problem, not the reference's.
        try Data("record: Site\nversion: 1\nfields:\n  name: { type: text, max_length: 0 }\n".utf8).write(
            to: folder.appendingPathComponent("Site.yaml"))
        let broken = try await ProcessRunner.run(DemoProcessTests.formsync, ["check", folder.path])
        #expect(!broken.errors.contains("which no record spec declares"), "\(broken.errors)")
    }

    @Test func serveScriptsAnOutageAndRefusesAnAbsurdOne() async throws {
        try await OffThePool.run {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outage-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let absurd = try await ProcessRunner.run(
                DemoProcessTests.formsync, ["serve", "--port", "0", "--db", folder.path, "--fault", "outage=999999"])
            #expect(absurd.status == 2)
            #expect(absurd.errors.contains("--fault outage takes outage=SECONDS or outage=SECONDS@AFTER"))
            let server = try ChildProcess(
                DemoProcessTests.formsync.path, ["serve", "--port", "0", "--db", folder.path, "--fault", "outage=600"],
                standardOutput: .pipe,
                standardError: .discard)
            defer {
                server.signal()
                server.waitUntilExit()
            }
            try #require(server.output != nil)
            // The whole banner, to its last line: the server has started (and issued its tokens).
            let text = server.readOutput(until: "access token:")
            let port = try #require(
                text.split(separator: "\n").first { $0.hasPrefix("FormSync reference server on") }?.split(separator: ":").last.flatMap {
                    UInt16($0)
                }, "\(text)")
            // Nothing answers, not even the health check: the connection closes with no reply.
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/health")!)
            request.timeoutInterval = 10
            let reply = try? await URLSession.shared.data(for: request)
            #expect(reply == nil, "an answer during the outage: \(String(describing: reply?.1))")
        }
    }

    @Test func theEnqueueBenchmarkHonoursItemsAndItsOutputReachesAPipeAsItIsPrinted() async throws {
        try await OffThePool.run {
            // Killed after its first line: with standard output held in stdio's buffer (as it was
            // when piped), that line would never arrive.
            let long = try ChildProcess(
                DemoProcessTests.lab.path, ["bench", "enqueue", "--items", "100000", "--parts", "naive"], standardOutput: .pipe,
                standardError: .discard)
            let output = try #require(long.output)
            let firstLine = DispatchSemaphore(value: 0)
            final class Box: @unchecked Sendable { var text = "" }
            let box = Box()
            Thread.detachNewThread {
                while !box.text.contains("\n") {
                    let chunk = output.availableData
                    if chunk.isEmpty { break }
                    box.text += String(decoding: chunk, as: UTF8.self)
                }
                firstLine.signal()
            }
            let arrived = firstLine.wait(timeout: .now() + 120) == .success
            long.signal(SIGKILL)
            long.waitUntilExit()
            #expect(arrived && box.text.hasPrefix("enqueue benchmark: 100000 items"), "\(box.text)")
            // --items sets the naive queue's sizes too: a tenth, the count, ten times.
            let run = try await ProcessRunner.run(
                DemoProcessTests.lab, ["bench", "enqueue", "--items", "20", "--rounds", "3", "--parts", "naive"])
            #expect(run.status == 0, "\(run.errors)")
            let rows = run.output.split(separator: "\n").filter { $0.hasPrefix("    ") }.compactMap {
                Int($0.split(separator: " ").first ?? "")
            }
            #expect(rows == [10, 20, 200], "\(run.output)")
        }
    }
}
