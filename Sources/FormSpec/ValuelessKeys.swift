/// Entries of a flow mapping that the text gave no value: `{ label: Harbour, old port }` reads,
/// by YAML's rules, as `label: Harbour` and a key `old port` with an empty value, because the
/// comma ends the entry. A spec never means that. Each such key is reported once, with the
/// quoting that was meant, and left out, so that it does not come back as errors about a
/// column or a field named `old port`.
enum ValuelessKeys {
    /// `node` without its value-less flow entries, each reported through `report`. `lines` are
    /// the spec's source lines (a key is value-less when the character after it is `,` or `}`,
    /// not `:`). The tree is at most `YAMLReader.maxDepth` deep, so the recursion is bounded.
    static func removed(
        from node: YAMLNode, lines: [Substring], report: (SourceLocation, String) -> Void
    ) -> YAMLNode {
        switch node.kind {
        case .mapping(let pairs):
            var kept: [(key: YAMLNode, value: YAMLNode)] = []
            for pair in pairs {
                if let name = pair.key.scalar, pair.key.isPlainScalar, pair.value.scalar == "", pair.value.isPlainScalar,
                    let after = character(after: name, at: pair.key.location, in: lines), after == "," || after == "}"
                {
                    let meant = kept.last.flatMap { $0.value.scalar }.map { " (\"\($0), \(name)\")" } ?? ""
                    report(
                        pair.key.location,
                        "'\(name)' has no ':' and no value: inside { … } a comma ends an entry; quote a value that holds a comma\(meant)")
                    continue
                }
                kept.append((pair.key, removed(from: pair.value, lines: lines, report: report)))
            }
            return YAMLNode(kind: .mapping(kept), location: node.location)
        case .sequence(let items):
            return YAMLNode(kind: .sequence(items.map { removed(from: $0, lines: lines, report: report) }), location: node.location)
        case .scalar, .invalid:
            return node
        }
    }

    /// The first character after `name`, spaces skipped, when the line holds `name` at `location`.
    static func character(after name: String, at location: SourceLocation, in lines: [Substring]) -> Character? {
        guard location.line >= 1, location.line <= lines.count, location.column >= 1 else { return nil }
        let scalars = Array(lines[location.line - 1].unicodeScalars)
        let key = Array(name.unicodeScalars)
        let start = location.column - 1
        guard start + key.count <= scalars.count, Array(scalars[start..<(start + key.count)]) == key else { return nil }
        return scalars[(start + key.count)...].first { $0 != " " && $0 != "\t" }.map(Character.init)
    }
}
