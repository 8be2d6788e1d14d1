import Foundation
import Testing

/// The short run of the crash harness (`formsync-lab torture crash`): a real device process
/// SIGKILLed 50 times at named moments and seeded delays, then checked against the server.
struct CrashTortureTests {
    @Test func fiftyKillsAtNamedMomentsLoseNothingAndApplyNothingTwice() async throws {
        let binary = DemoProcessTests.lab
        try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build the lab first (swift build)")
        let run = try await ProcessRunner.run(binary, ["torture", "crash", "--kills", "50", "--seed", "20261130"])
        #expect(run.status == 0, "\(run.output)\n\(run.errors.suffix(6000))")
        #expect(run.output.contains("kills: 50 over"), "\(run.output)")
        #expect(!run.output.contains("FAILED"), "\(run.output)")
        // The kills landed at several of the named moments, not only on the timer.
        let kills = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("kills: ") })
        let moments = kills.drop { $0 != "(" }.dropFirst().dropLast().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let named = moments.compactMap { moment -> String? in
            let parts = moment.split(separator: " ")
            return parts.count == 2 && parts[0] != "timer" && Int(parts[1]) ?? 0 > 0 ? String(parts[0]) : nil
        }
        #expect(named.count >= 3, "kills by moment: \(run.output)")
        // What was checked is not empty: documents, files, lanes, edits and records.
        let server = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("server: ") })
        let numbers = server.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        #expect(numbers.count >= 4 && numbers.allSatisfy { $0 > 0 }, "\(server)")
    }
}
