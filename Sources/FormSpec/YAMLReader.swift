/// Reads strict YAML into `YAMLNode`s, keeping the position of every key and value. Strict
/// means: one document per file, no anchors, aliases, tags or merge keys, and a duplicate key is
/// an error at its second occurrence. Problems are collected, not thrown, so that a file's every
/// problem can be reported at once. The grammar is YAML 1.1 as libyaml reads it (`YAMLParser`
/// is a port of it), so nothing but the toolchain is needed to read a spec.
struct YAMLReader {
    let path: String
    private(set) var diagnostics: [Diagnostic] = []

    init(path: String) {
        self.path = path
    }

    /// Parses `text`; returns the root node, or nil when the text is not readable YAML (the reason
    /// is in `diagnostics`) or is empty.
    mutating func read(_ text: String) -> YAMLNode? {
        var events = YAMLParser(text)
        return read(events: &events)
    }

    /// Builds the tree from any source of events (the differential test feeds it libyaml's).
    mutating func read(events: inout some YAMLEventSource) -> YAMLNode? {
        var root: YAMLNode?
        var documents = 0
        while true {
            guard let event = next(&events) else { return nil }
            switch event.kind {
            case .streamEnd:
                return root
            case .documentStart:
                documents += 1
                if documents > 1 {
                    error(event.start.location, "a spec file holds one YAML document; found a second one here")
                    return root
                }
            case .documentEnd, .streamStart:
                continue
            default:
                guard let node = readNode(startingWith: event, &events, depth: 1) else { return nil }
                root = node
            }
        }
    }

    private mutating func error(_ location: SourceLocation, _ message: String) {
        diagnostics.append(Diagnostic(.error, path: path, at: location, message))
    }

    private mutating func next(_ events: inout some YAMLEventSource) -> YAMLEvent? {
        switch events.next() {
        case .success(let event):
            return event
        case .failure(let failure):
            error(failure.mark.location, failure.message)
            return nil
        }
    }

    /// How deeply collections may nest. A spec needs a dozen levels at most; the bound keeps the
    /// reader's recursion (and everything after it) safe from input like 15,000 nested `[`.
    static let maxDepth = 64

    /// Reads one node whose first event is `event`, at nesting `depth`. Returns nil only when
    /// parsing cannot go on.
    private mutating func readNode(startingWith event: YAMLEvent, _ events: inout some YAMLEventSource, depth: Int) -> YAMLNode? {
        let location = event.start.location
        if depth > Self.maxDepth, event.kind == .sequenceStart || event.kind == .mappingStart {
            error(location, "the YAML nests deeper than \(Self.maxDepth) levels; a spec never needs that much")
            return nil
        }
        if event.hasAnchor {
            error(location, "anchors (&name) are not allowed in a spec; write the value out")
        }
        if event.hasTag {
            error(location, "tags (!name) are not allowed in a spec; values are typed by their field")
        }
        switch event.kind {
        case .alias:
            error(location, "aliases (*name) are not allowed in a spec; write the value out")
            return YAMLNode(kind: .invalid, location: location)
        case .scalar:
            return YAMLNode(kind: .scalar(event.value, plain: event.style == .plain), location: location)
        case .sequenceStart:
            var items: [YAMLNode] = []
            while true {
                guard let item = next(&events) else { return nil }
                if item.kind == .sequenceEnd { break }
                guard let node = readNode(startingWith: item, &events, depth: depth + 1) else { return nil }
                items.append(node)
            }
            return YAMLNode(kind: .sequence(items), location: location)
        case .mappingStart:
            var pairs: [(key: YAMLNode, value: YAMLNode)] = []
            var seen: [String: SourceLocation] = [:]
            while true {
                guard let keyEvent = next(&events) else { return nil }
                if keyEvent.kind == .mappingEnd { break }
                guard let key = readNode(startingWith: keyEvent, &events, depth: depth + 1) else { return nil }
                guard let valueEvent = next(&events) else { return nil }
                guard let value = readNode(startingWith: valueEvent, &events, depth: depth + 1) else { return nil }
                guard let name = key.scalar else {
                    error(key.location, "a key must be a plain name, not \(key.kindName)")
                    continue
                }
                if name == "<<" && key.isPlainScalar {
                    error(key.location, "merge keys (<<) are not allowed in a spec; write the keys out")
                    continue
                }
                if let first = seen[name] {
                    error(key.location, "duplicate key '\(name)' (first defined at line \(first.line), column \(first.column))")
                    continue
                }
                seen[name] = key.location
                pairs.append((key, value))
            }
            return YAMLNode(kind: .mapping(pairs), location: location)
        default:
            error(location, "unexpected YAML structure")
            return nil
        }
    }
}
