import CQRencode
import FormSyncCommandLine
import Foundation

/// The QR code of an enrolment link, what an operator shows a phone: drawn for a terminal, or
/// written as SVG (to print or put on a screen) or as a plain bitmap (PBM, which any image
/// tool opens). Made by libqrencode, error correction level M, with the standard quiet zone.
struct EnrolmentQRCode {
    /// Modules per side, and whether each is dark, row by row.
    let size: Int
    let dark: [Bool]
    /// Light modules around the symbol (ISO/IEC 18004 asks for four).
    static let quietZone = 4

    /// Nil when the text does not fit a QR code (over about 2 KB at level M).
    init?(_ text: String) {
        guard text.utf8.count <= 2048, !text.utf8.contains(0), let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else {
            return nil
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        guard (21...177).contains(width), let data = code.pointee.data else { return nil }
        size = width
        dark = (0..<width * width).map { data[$0] & 1 == 1 }
    }

    /// Whether the module at `row`, `column` (quiet zone included) is dark.
    func isDark(_ row: Int, _ column: Int) -> Bool {
        let (r, c) = (row - Self.quietZone, column - Self.quietZone)
        guard (0..<size).contains(r), (0..<size).contains(c) else { return false }
        return dark[r * size + c]
    }

    /// Two modules per character cell (upper and lower half blocks), light drawn and dark left
    /// blank: on a terminal's dark background the code reads as it would on paper.
    var terminal: String {
        let side = size + 2 * Self.quietZone
        var lines: [String] = []
        for row in stride(from: 0, to: side, by: 2) {
            var line = ""
            for column in 0..<side {
                let (upper, lower) = (!isDark(row, column), row + 1 < side && !isDark(row + 1, column))
                switch (upper, lower) {
                case (true, true): line += "\u{2588}"
                case (true, false): line += "\u{2580}"
                case (false, true): line += "\u{2584}"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// An SVG of the code, `scale` pixels per module.
    func svg(scale: Int = 8) -> String {
        let side = (size + 2 * Self.quietZone) * scale
        var rects = ""
        for row in 0..<size + 2 * Self.quietZone {
            for column in 0..<size + 2 * Self.quietZone where isDark(row, column) {
                rects += "<rect x=\"\(column * scale)\" y=\"\(row * scale)\" width=\"\(scale)\" height=\"\(scale)\"/>"
            }
        }
        return
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(side)\" height=\"\(side)\" viewBox=\"0 0 \(side) \(side)\" shape-rendering=\"crispEdges\"><rect width=\"\(side)\" height=\"\(side)\" fill=\"#fff\"/><g fill=\"#000\">\(rects)</g></svg>\n"
    }

    /// A plain PBM bitmap of the code, `scale` pixels per module (1 is black).
    func pbm(scale: Int = 8) -> String {
        let side = (size + 2 * Self.quietZone) * scale
        var out = "P1\n\(side) \(side)\n"
        for y in 0..<side {
            out += (0..<side).map { isDark(y / scale, $0 / scale) ? "1" : "0" }.joined(separator: " ") + "\n"
        }
        return out
    }

    /// Writes the code to `path`: SVG for a name ending in `.svg`, a PBM bitmap for `.pbm`.
    func write(to path: String) throws {
        let text: String
        switch (path as NSString).pathExtension.lowercased() {
        case "svg": text = svg()
        case "pbm": text = pbm()
        default: throw UsageError("--qr writes FILE.svg or FILE.pbm")
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
