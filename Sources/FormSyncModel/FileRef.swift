import Foundation

/// A file held by a form: while offline a placeholder (negative id) for a stashed file, after
/// upload the server's positive id. Size and media type travel with it so that a validator on
/// either side can check `max_bytes` and `content_types`.
///
/// A file may also be *pending* (id 0, with its `digest`): a submission went before its file,
/// naming the file by its content digest, size and media type; the server completes it when the
/// upload with those bytes arrives (docs/PROTOCOL.md, "Deferred files").
public struct FileRef: Codable, Sendable, Hashable {
    /// Negative: a placeholder minted on the device. Positive: the server's file id. Zero: a
    /// pending file, known by its `digest` until its bytes reach the server.
    public var id: Int64
    /// The file's size in bytes, when known.
    public var byteCount: Int64?
    /// The media type, such as `image/jpeg`, when known.
    public var contentType: String?
    /// The file's SHA-256 as `sha-256=:<base64>:` (RFC 9530's form): what a pending file is
    /// known by.
    public var digest: String?

    public init(id: Int64, byteCount: Int64? = nil, contentType: String? = nil, digest: String? = nil) {
        self.id = id
        self.byteCount = byteCount
        self.contentType = contentType
        self.digest = digest
    }

    /// A file that goes after the submission holding it: its digest, size and media type.
    public static func pending(sha256: Data, byteCount: Int64, contentType: String) -> FileRef {
        FileRef(id: 0, byteCount: byteCount, contentType: contentType, digest: digestText(sha256))
    }

    /// Whether this still points at a file that has not been uploaded.
    public var isPlaceholder: Bool { id < 0 }

    /// Whether this names a file by its digest, before the server holds its bytes.
    public var isPending: Bool { id == 0 && digest != nil }

    /// The SHA-256 the `digest` names, when it is a well-formed `sha-256=:<base64>:` of 32 bytes.
    public var sha256: Data? { digest.flatMap(Self.sha256(of:)) }

    /// `sha-256=:<base64>:` for a SHA-256.
    public static func digestText(_ sha256: Data) -> String { "sha-256=:\(sha256.base64EncodedString()):" }

    /// The 32 bytes a `sha-256=:<base64>:` digest names; nil for anything else.
    public static func sha256(of digest: String) -> Data? {
        guard digest.utf8.count == 54, digest.hasPrefix("sha-256=:"), digest.hasSuffix(":"),
            let bytes = Data(base64Encoded: String(digest.dropFirst(9).dropLast())), bytes.count == 32
        else { return nil }
        return bytes
    }

    enum CodingKeys: String, CodingKey {
        case id
        case byteCount = "byte_count"
        case contentType = "content_type"
        case digest
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        digest = try container.decodeIfPresent(String.self, forKey: .digest)
        // A pending file has no id yet; anything else must carry one.
        id = digest != nil && !container.contains(.id) ? 0 : try container.decode(Int64.self, forKey: .id)
        byteCount = try container.decodeIfPresent(Int64.self, forKey: .byteCount)
        contentType = try container.decodeIfPresent(String.self, forKey: .contentType)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(byteCount, forKey: .byteCount)
        try container.encodeIfPresent(contentType, forKey: .contentType)
        try container.encodeIfPresent(digest, forKey: .digest)
        if !isPending { try container.encode(id, forKey: .id) }
    }

    /// The same file with its placeholder id swapped when `ids` maps it; a server id is never
    /// touched.
    public func remapped(_ ids: [Int64: Int64]) -> FileRef {
        var copy = self
        if id < 0, let replacement = ids[id] { copy.id = replacement }
        return copy
    }
}

/// An id of another entity: positive when the server assigned it, negative (a placeholder) when
/// the entity was created offline and its creating submission has not landed yet. Encodes as a
/// bare JSON number.
public struct EntityRef: Codable, Sendable, Hashable, CustomStringConvertible {
    /// Positive: the server's id. Negative: a placeholder for a record created offline.
    public var id: Int64

    public init(_ id: Int64) {
        self.id = id
    }

    /// Whether the referenced record has not reached the server yet.
    public var isPlaceholder: Bool { id < 0 }

    public init(from decoder: any Decoder) throws {
        id = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(id)
    }

    /// The same reference with its placeholder id swapped when `ids` maps it; a server id is
    /// never touched.
    public func remapped(_ ids: [Int64: Int64]) -> EntityRef {
        id < 0 ? EntityRef(ids[id] ?? id) : self
    }

    public var description: String { String(id) }
}
