import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The crash harness device's own account of what it was told was saved: one line per
/// capture, written and fsynced after `enqueue` returned and before the next capture. What it
/// lists must all reach the server; a kill can only lose the line, never the capture.
package struct TortureLog {
    package enum Entry: Equatable, Sendable {
        /// `principal`: who captured it (on a shared phone; the courier otherwise).
        case customer(index: Int, principal: String)
        case order(index: Int, customer: Int64, principal: String)
        case edit(index: Int, delivery: Int64)
        /// Nothing to edit had been pulled yet.
        case skipped(index: Int)
        case inspection(index: Int, principal: String)
        /// The removal of the seeded finding with this server id.
        case removal(index: Int, finding: Int64)

        package var index: Int {
            switch self {
            case .customer(let i, _), .order(let i, _, _), .edit(let i, _), .skipped(let i), .inspection(let i, _), .removal(let i, _):
                return i
            }
        }

        var line: String {
            switch self {
            case .customer(let i, let principal): return "C \(i) \(principal)"
            case .order(let i, let customer, let principal): return "O \(i) \(customer) \(principal)"
            case .edit(let i, let delivery): return "E \(i) \(delivery)"
            case .skipped(let i): return "S \(i)"
            case .inspection(let i, let principal): return "I \(i) \(principal)"
            case .removal(let i, let finding): return "R \(i) \(finding)"
            }
        }

        init?(line: Substring) {
            let parts = line.split(separator: " ")
            guard parts.count >= 2, let index = Int(parts[1]), index >= 0 else { return nil }
            switch (parts[0], parts.count) {
            case ("C", 3): self = .customer(index: index, principal: String(parts[2]))
            case ("O", 4):
                guard let c = Int64(parts[2]) else { return nil }
                self = .order(index: index, customer: c, principal: String(parts[3]))
            case ("E", 3):
                guard let d = Int64(parts[2]) else { return nil }
                self = .edit(index: index, delivery: d)
            case ("S", 2): self = .skipped(index: index)
            case ("I", 3): self = .inspection(index: index, principal: String(parts[2]))
            case ("R", 3):
                guard let f = Int64(parts[2]) else { return nil }
                self = .removal(index: index, finding: f)
            default: return nil
            }
        }
    }

    /// Every complete line of the log (a line a kill cut short has no newline and is left out).
    package static func read(_ path: String) -> [Entry] {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else { return [] }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        lines.removeLast()  // after the last newline: empty, or a line cut short
        return lines.compactMap { Entry(line: $0) }
    }

    private let descriptor: Int32

    package init(appendingTo path: String) throws {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        guard descriptor >= 0 else { throw TortureError("cannot open the log \(path): \(String(cString: strerror(errno)))") }
    }

    /// Appends an entry and makes it durable before returning.
    package func append(_ entry: Entry) throws {
        let bytes = Array((entry.line + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(descriptor) == 0 else {
            throw TortureError("cannot write the log: \(String(cString: strerror(errno)))")
        }
    }

    package func close() {
        #if canImport(Darwin)
            _ = Darwin.close(descriptor)
        #elseif canImport(Glibc)
            _ = Glibc.close(descriptor)
        #elseif canImport(Musl)
            _ = Musl.close(descriptor)
        #endif
    }
}

/// A torture run could not go on, or an invariant failed.
package struct TortureError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
