import FormSyncProtocol
import Foundation
import Testing

/// The QR code an operator shows a phone reads back, with a real decoder (zbar), as the very
/// link `formsync devices --enrol` prints: from the SVG-or-bitmap file, and from the drawing on
/// a terminal.
struct EnrolmentQRCodeTests {
    static var zbarimg: String? {
        ["/usr/bin/zbarimg", "/usr/local/bin/zbarimg"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// What zbar reads in the image at `path` (its `QR-Code:` lines, the prefix dropped).
    static func decode(_ path: String) async throws -> [String] {
        let zbarimg = try #require(Self.zbarimg, "the QR decoder is missing: apt-get install zbar-tools")
        let run = try await ProcessRunner.run(URL(fileURLWithPath: zbarimg), ["-q", path])
        return run.output.split(separator: "\n").filter { $0.hasPrefix("QR-Code:") }.map { String($0.dropFirst("QR-Code:".count)) }
    }

    /// A terminal drawing (light modules drawn in half blocks, dark ones blank) as a PBM bitmap,
    /// eight pixels per module.
    static func bitmap(ofDrawing drawing: String) -> String {
        var rows: [[Bool]] = []
        for line in drawing.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            var upper: [Bool] = []
            var lower: [Bool] = []
            for character in line {
                switch character {
                case "\u{2588}": (upper, lower) = (upper + [false], lower + [false])
                case "\u{2580}": (upper, lower) = (upper + [false], lower + [true])
                case "\u{2584}": (upper, lower) = (upper + [true], lower + [false])
                default: (upper, lower) = (upper + [true], lower + [true])
                }
            }
            rows += [upper, lower]
        }
        let width = (rows.map(\.count).max() ?? 0) * 8
        var out = "P1\n\(width) \(rows.count * 8)\n"
        for row in rows {
            let line = row.flatMap { Array(repeating: $0 ? "1" : "0", count: 8) }.joined(separator: " ")
            for _ in 0..<8 { out += line + "\n" }
        }
        return out
    }

    @Test func anEnrolmentsQRCodeReadsBackAsTheLinkFromAFileAndFromATerminal() async throws {
        let (folder, server) = try DeviceEnrolmentTests.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let office = try server.issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
        let base = ["devices", "--server", server.baseURL.absoluteString, "--workspace", "acme", "--enrol", "courier-9"]
        let environment = ["FORMSYNC_TOKEN": office]
        let image = folder.appendingPathComponent("enrol.pbm").path
        let toFile = try await ProcessRunner.run(DemoProcessTests.formsync, base + ["--qr", image], environment: environment)
        #expect(toFile.status == 0, "\(toFile.errors)")
        let link = toFile.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(EnrolmentLink(parsing: link) != nil, "\(link)")
        #expect(try await Self.decode(image) == [link])

        let drawn = try await ProcessRunner.run(DemoProcessTests.formsync, base + ["--qr", "-"], environment: environment)
        #expect(drawn.status == 0, "\(drawn.errors)")
        let drawing = drawn.errors.split(separator: "\n").filter {
            $0.unicodeScalars.allSatisfy { " \u{2580}\u{2584}\u{2588}".unicodeScalars.contains($0) }
        }
        let fromTerminal = folder.appendingPathComponent("terminal.pbm").path
        try Data(Self.bitmap(ofDrawing: drawing.joined(separator: "\n")).utf8).write(to: URL(fileURLWithPath: fromTerminal))
        #expect(try await Self.decode(fromTerminal) == [drawn.output.trimmingCharacters(in: .whitespacesAndNewlines)])

        let svg = folder.appendingPathComponent("enrol.svg").path
        #expect(try await ProcessRunner.run(DemoProcessTests.formsync, base + ["--qr", svg], environment: environment).status == 0)
        let text = try String(contentsOfFile: svg, encoding: .utf8)
        #expect(text.hasPrefix("<svg ") && text.contains("<rect x="))
        // Another format is a usage mistake, refused before any code is made.
        let wrong = try await ProcessRunner.run(DemoProcessTests.formsync, base + ["--qr", "enrol.png"], environment: environment)
        #expect(wrong.status == 2 && wrong.errors.contains("FILE.svg or FILE.pbm"))
    }
}
