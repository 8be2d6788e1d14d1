import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A progress line on standard error: redrawn in place on a terminal; in a log (a pipe or a
/// file) a plain line, written only when the text changes and at most once every `interval`
/// seconds, so a log never fills with carriage returns or thousands of copies.
package struct ProgressLine {
    private let terminal: Bool
    private let interval: Double
    private var last = ""
    private var lastWritten = -Double.infinity
    private var drawn = false

    package init(interval: Double = 2, terminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.terminal = terminal
        self.interval = interval
    }

    /// What `update` writes for `text` at `now` (seconds on any monotonic clock), if anything.
    package mutating func render(_ text: String, now: Double) -> String? {
        if terminal {
            drawn = true
            return "\r" + text + "   "
        }
        guard text != last, now - lastWritten >= interval else { return nil }
        last = text
        lastWritten = now
        return text + "\n"
    }

    package mutating func update(_ text: String) {
        if let line = render(text, now: ProcessInfo.processInfo.systemUptime) {
            FileHandle.standardError.write(Data(line.utf8))
        }
    }

    /// Ends the line on a terminal; in a log, writes the final text if it was not the last written.
    package mutating func finish(_ text: String) {
        if terminal {
            FileHandle.standardError.write(Data((drawn ? "\r" + text + "   \n" : text + "\n").utf8))
        } else if text != last {
            FileHandle.standardError.write(Data((text + "\n").utf8))
        }
        last = text
    }
}
