/// A YAML node with the source position of its first character. The reader produces this
/// tree; the checker reads it. Only the three YAML kinds exist here: anchors, aliases, tags
/// and merge keys are refused by the reader before a node is built.
struct YAMLNode: Sendable {
    enum Kind: Sendable {
        /// A scalar with its text and whether it was written without quotes (plain), which is
        /// what decides whether `yes` or `010` could be misread by other YAML tools.
        case scalar(String, plain: Bool)
        case mapping([(key: YAMLNode, value: YAMLNode)])
        case sequence([YAMLNode])
        /// A node already reported as not allowed (an alias); checks skip it silently.
        case invalid
    }

    var kind: Kind
    var location: SourceLocation

    var scalar: String? {
        if case .scalar(let text, _) = kind { return text }
        return nil
    }

    var isPlainScalar: Bool {
        if case .scalar(_, let plain) = kind { return plain }
        return false
    }

    var kindName: String {
        switch kind {
        case .scalar: return "a scalar"
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .invalid: return "an alias"
        }
    }
}
