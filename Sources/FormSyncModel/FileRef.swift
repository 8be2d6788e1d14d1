/// A file held by a form: while offline a placeholder (negative id) for a stashed file, after
/// upload the server's positive id. Size and media type travel with it so that a validator on
/// either side can check `max_bytes` and `content_types`.
public struct FileRef: Codable, Sendable, Hashable {
    /// Negative: a placeholder minted on the device. Positive: the server's file id.
    public var id: Int64
    /// The file's size in bytes, when known.
    public var byteCount: Int64?
    /// The media type, such as `image/jpeg`, when known.
    public var contentType: String?

    public init(id: Int64, byteCount: Int64? = nil, contentType: String? = nil) {
        self.id = id
        self.byteCount = byteCount
        self.contentType = contentType
    }

    /// Whether this still points at a file that has not been uploaded.
    public var isPlaceholder: Bool { id < 0 }

    enum CodingKeys: String, CodingKey {
        case id
        case byteCount = "byte_count"
        case contentType = "content_type"
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
