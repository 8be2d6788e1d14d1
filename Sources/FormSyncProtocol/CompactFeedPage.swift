import Foundation

/// The compact form of a page of the change feed (docs/PROTOCOL.md, "Compact pages"): the same
/// page as its JSON form, with each change as a length-prefixed frame around the record's stored
/// bytes, so that neither side writes or reads a record's JSON to move it, and a page may hold
/// ten times as many changes. A device asks for it with `Accept`; a server that lists
/// `compact-feed` answers it, any other answers JSON.
///
/// Layout, integers big-endian: the magic `FSF1`; a `UInt32` length and the envelope (the JSON
/// page with `changes` empty: cursor, more, remaining, reviews, support request); a `UInt32`
/// count; then each change: a `UInt8` kind, a `UInt16` type length and the type's UTF-8, a
/// `UInt64` id, and for a state a `UInt32` version, a `UInt32` length and the record's JSON
/// object. Nothing follows the last change.
public enum CompactFeedPage {
    /// The media type a device accepts and a server answers with.
    public static let mediaType = "application/vnd.formsync.feed"
    /// The most changes one compact page holds (a JSON page holds at most 1,000).
    public static let maxChanges = 10_000
    /// A compact page stops after the change that takes its records' bytes past this (8 MiB),
    /// so that a page of large records stays well under a device's reply bound.
    public static let maxRecordBytes = 8 << 20

    static let magic: [UInt8] = Array("FSF1".utf8)
    /// The fewest bytes a change takes (a kind, a type of one byte and an id): a count that
    /// the bytes left cannot hold is refused before anything is allocated for it.
    static let minimumFrame = 1 + 2 + 1 + 8

    /// What one frame says of its record.
    public enum Kind: UInt8, Sendable {
        /// The record's latest state: version and fields follow.
        case state = 1
        /// The record left the caller's scope (deleted, or moved to someone else's).
        case deleted = 2
        /// In a subscription's page: the record no longer matches the subscription.
        case outside = 3
    }

    /// Writes a compact page: the envelope first, then exactly `count` changes.
    public struct Writer: Sendable {
        private var bytes: [UInt8]

        /// The page's bytes so far.
        public var body: Data { Data(bytes) }

        /// `envelope`: the page's JSON object with `changes` empty; `count`: how many changes
        /// will be appended; `capacity`: the bytes expected, to allocate once.
        public init(envelope: Data, count: Int, capacity: Int = 0) {
            bytes = []
            bytes.reserveCapacity(capacity + envelope.count + 16)
            bytes.append(contentsOf: CompactFeedPage.magic)
            append(UInt32(truncatingIfNeeded: envelope.count))
            envelope.withUnsafeBytes { bytes.append(contentsOf: $0) }
            append(UInt32(truncatingIfNeeded: count))
        }

        /// Appends one change; `version` and `record` for a state only.
        public mutating func append(kind: Kind, type: String, id: Int64, version: Int = 0, record: Data? = nil) {
            bytes.append(kind.rawValue)
            let typeLength = min(type.utf8.count, Int(UInt16.max))
            append(UInt16(typeLength))
            bytes.append(contentsOf: type.utf8.prefix(typeLength))
            append(UInt64(bitPattern: id))
            guard kind == .state else { return }
            append(UInt32(clamping: version))
            append(UInt32(truncatingIfNeeded: record?.count ?? 0))
            record?.withUnsafeBytes { bytes.append(contentsOf: $0) }
        }

        private mutating func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
        }
    }

    /// One change as a frame holds it. `record` is the range of the record's bytes in the page.
    public struct Frame: Sendable, Equatable {
        public var kind: Kind
        /// The record's type, as the frame names it.
        public var type: String
        /// The record's id, as sent (the caller checks its range).
        public var id: Int64
        /// A state's version (0 for the other kinds), as sent.
        public var version: Int64
        /// Where a state's record lies in the page's bytes (nil for the other kinds).
        public var record: Range<Int>?
    }

    /// A compact page read: its envelope's bytes and its frames.
    public struct Read: Sendable {
        /// The page's JSON object with `changes` empty.
        public var envelope: Data
        /// The changes, in the page's order.
        public var frames: [Frame]
    }

    /// Reads a compact page of at most `limit` changes; nil when the bytes are not one (a
    /// wrong magic, a length past the end, an unknown kind, an empty or over-long type that is
    /// not UTF-8, bytes after the last change, more changes than `limit`). Nothing is taken on
    /// trust: every length is checked against what is left before it is used. A frame's id,
    /// version and record are returned as they are: the caller checks what they mean.
    public static func read(_ body: Data, limit: Int) -> Read? {
        body.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Read? in
            var reader = ByteReader(bytes: raw)
            guard reader.take(magic.count).map({ $0.elementsEqual(magic) }) == true, let envelopeLength = reader.uint32(),
                let envelope = reader.take(Int(envelopeLength)), let count = reader.uint32(), Int(count) <= limit,
                Int(count) <= reader.left / minimumFrame
            else { return nil }
            let base = body.startIndex
            let envelopeData = Data(envelope)
            var frames: [Frame] = []
            frames.reserveCapacity(Int(count))
            var types: [String] = []
            for _ in 0..<Int(count) {
                guard let kindByte = reader.uint8(), let kind = Kind(rawValue: kindByte), let typeLength = reader.uint16(), typeLength > 0,
                    let typeBytes = reader.take(Int(typeLength)), let id = reader.uint64()
                else { return nil }
                // One page holds a few types: each is made once, not once per change.
                let type: String
                if let known = types.first(where: { $0.utf8.elementsEqual(typeBytes) }) {
                    type = known
                } else {
                    guard let made = String(validating: typeBytes, as: UTF8.self) else { return nil }
                    if types.count < 64 { types.append(made) }
                    type = made
                }
                var frame = Frame(kind: kind, type: type, id: Int64(bitPattern: id), version: 0, record: nil)
                if kind == .state {
                    guard let version = reader.uint32(), let length = reader.uint32() else { return nil }
                    let start = reader.offset
                    guard reader.take(Int(length)) != nil else { return nil }
                    frame.version = Int64(version)
                    frame.record = (base + start)..<(base + start + Int(length))
                }
                frames.append(frame)
            }
            guard reader.atEnd else { return nil }
            return Read(envelope: envelopeData, frames: frames)
        }
    }

    /// Reads big-endian integers and byte runs, never past the end.
    private struct ByteReader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        var atEnd: Bool { offset == bytes.count }
        var left: Int { bytes.count - offset }

        mutating func take(_ count: Int) -> UnsafeRawBufferPointer? {
            guard count >= 0, count <= bytes.count - offset else { return nil }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        }

        mutating func uint8() -> UInt8? { take(1).map { $0[0] } }

        mutating func uint16() -> UInt16? {
            take(2).map { UInt16($0[0]) << 8 | UInt16($0[1]) }
        }

        mutating func uint32() -> UInt32? {
            take(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } }
        }

        mutating func uint64() -> UInt64? {
            take(8).map { $0.reduce(0) { $0 << 8 | UInt64($1) } }
        }
    }
}
