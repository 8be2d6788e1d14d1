import Foundation

/// What a torture run shows of a device process's output when the device failed: the head of
/// a crash report (the fatal error and the crashed thread's frames, which a tail of the
/// output cuts away behind the other threads' stacks and the registers) and then the output's
/// last lines.
package enum DeviceOutput {
    /// The excerpt of the output file at `url` (empty when it cannot be read).
    package static func excerpt(of url: URL) -> String {
        excerpt((try? String(contentsOf: url, encoding: .utf8)) ?? "")
    }

    package static func excerpt(_ text: String, headLines: Int = 40, tailCharacters: Int = 1500) -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let markers = ["Fatal error", "Program crashed", "crashed:"]
        guard let first = lines.firstIndex(where: { line in markers.contains { line.contains($0) } }) else {
            return String(text.suffix(tailCharacters * 2))
        }
        let head = lines[first..<min(lines.count, first + headLines)].map { String($0.prefix(300)) }.joined(separator: "\n")
        return "\(head)\n[…]\n\(text.suffix(tailCharacters))"
    }
}
