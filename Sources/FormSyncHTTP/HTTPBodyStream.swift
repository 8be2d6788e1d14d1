import Foundation

/// A reply body the server reads in pieces as the client takes them, instead of holding it
/// whole: a stored file of any size costs each connection at most one piece of memory, and a
/// range reads only its own bytes.
public struct HTTPBodyStream: Sendable {
    /// The body's length, sent as `Content-Length`.
    public var count: Int64
    /// Reads `count` bytes at `offset` (0 is the body's first byte). Called on a worker thread,
    /// never on the event loop; a throw, or fewer bytes than asked, ends the connection (its
    /// `Content-Length` cannot be kept).
    public var read: @Sendable (_ offset: Int64, _ count: Int) throws -> Data

    /// The size of each piece the server reads (and `readAll` asks for).
    package static let pieceBytes = 256 * 1024

    public init(count: Int64, read: @escaping @Sendable (_ offset: Int64, _ count: Int) throws -> Data) {
        self.count = max(0, count)
        self.read = read
    }

    /// The whole body at once, for a caller in the same process (tests, the in-process handler).
    public func readAll() throws -> Data {
        var data = Data()
        var offset: Int64 = 0
        while offset < count {
            let piece = try read(offset, Int(min(Int64(Self.pieceBytes), count - offset)))
            guard !piece.isEmpty else { throw ShortRead(offset: offset, count: count) }
            data.append(piece)
            offset += Int64(piece.count)
        }
        return data
    }

    /// A read that came back with fewer bytes than the body's length promised.
    public struct ShortRead: Error, CustomStringConvertible {
        public var offset: Int64
        public var count: Int64
        public var description: String { "the body's source ended at byte \(offset) of \(count)" }
    }
}
