import Foundation
import Testing

@testable import FormSyncCommandLine

/// A write that fails names the path and the system's reason in words.
struct WriteFailureTests {
    @Test func aFolderUnderAFileIsNotADirectoryInWords() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("plain-\(UUID().uuidString)")
        try Data().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let target = file.path + "/inside"
        do {
            try WriteFailure.writing(target) { try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true) }
            Issue.record("a folder was made under a file")
        } catch let failure as WriteFailure {
            #expect(failure.description == "cannot write \(target): Not a directory")
        }
        do {
            try WriteFailure.writing(target + "/f") { try Data("x".utf8).write(to: URL(fileURLWithPath: target + "/f"), options: .atomic) }
            Issue.record("a file was written under a file")
        } catch let failure as WriteFailure {
            #expect(failure.description.hasPrefix("cannot write \(target)/f: "))
            #expect(!failure.description.contains("Domain"), "\(failure)")
        }
    }

    @Test func argumentsRefuseUnknownOptionsAndOutOfRangeNumbers() throws {
        #expect(throws: UsageError.self) { try Arguments(["--nope"], options: ["--count"]) }
        let args = try Arguments(["a", "--count", "7", "--", "--literal"], options: ["--count"])
        #expect(args.positionals == ["a", "--literal"])
        #expect(try args.integer("--count", default: 1, in: 1...10) == 7)
        #expect(throws: UsageError.self) { try args.integer("--count", default: 1, in: 1...5) }
    }
}
