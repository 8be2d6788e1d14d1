import CYAML

/// Reads strict YAML into `YAMLNode`s over libyaml's event API, keeping the position of every
/// key and value. Strict means: one document per file, no anchors, aliases, tags or merge keys,
/// and a duplicate key is an error at its second occurrence. Problems are collected, not thrown,
/// so that a file's every problem can be reported at once.
struct YAMLReader {
    let path: String
    private(set) var diagnostics: [Diagnostic] = []

    init(path: String) {
        self.path = path
    }

    /// Parses `text`; returns the root node, or nil when the text is not readable YAML (the reason
    /// is in `diagnostics`) or is empty.
    mutating func read(_ text: String) -> YAMLNode? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            error(SourceLocation(line: 1, column: 1), "could not start the YAML parser")
            return nil
        }
        defer { yaml_parser_delete(&parser) }
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { buffer -> YAMLNode? in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            var events = EventStream(parser: &parser)
            return readStream(&events)
        }
    }

    private mutating func error(_ location: SourceLocation, _ message: String) {
        diagnostics.append(Diagnostic(.error, path: path, at: location, message))
    }

    private mutating func readStream(_ events: inout EventStream) -> YAMLNode? {
        var root: YAMLNode?
        var documents = 0
        while true {
            guard let event = next(&events) else { return nil }
            switch event.type {
            case YAML_STREAM_END_EVENT:
                return root
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                if documents > 1 {
                    error(event.location, "a spec file holds one YAML document; found a second one here")
                    return root
                }
            case YAML_DOCUMENT_END_EVENT, YAML_STREAM_START_EVENT:
                continue
            default:
                guard let node = readNode(startingWith: event, &events, depth: 1) else { return nil }
                root = node
            }
        }
    }

    private mutating func next(_ events: inout EventStream) -> Event? {
        switch events.next() {
        case .success(let event):
            return event
        case .failure(let failure):
            error(failure.location, failure.message)
            return nil
        }
    }

    /// How deeply collections may nest. A spec needs a dozen levels at most; the bound keeps the
    /// reader's recursion (and everything after it) safe from input like 15,000 nested `[`.
    static let maxDepth = 64

    /// Reads one node whose first event is `event`, at nesting `depth`. Returns nil only when
    /// parsing cannot go on.
    private mutating func readNode(startingWith event: Event, _ events: inout EventStream, depth: Int) -> YAMLNode? {
        if depth > Self.maxDepth, event.type == YAML_SEQUENCE_START_EVENT || event.type == YAML_MAPPING_START_EVENT {
            error(event.location, "the YAML nests deeper than \(Self.maxDepth) levels; a spec never needs that much")
            return nil
        }
        if event.anchor {
            error(event.location, "anchors (&name) are not allowed in a spec; write the value out")
        }
        if event.tag {
            error(event.location, "tags (!name) are not allowed in a spec; values are typed by their field")
        }
        switch event.type {
        case YAML_ALIAS_EVENT:
            error(event.location, "aliases (*name) are not allowed in a spec; write the value out")
            return YAMLNode(kind: .invalid, location: event.location)
        case YAML_SCALAR_EVENT:
            return YAMLNode(kind: .scalar(event.value, plain: event.plain), location: event.location)
        case YAML_SEQUENCE_START_EVENT:
            var items: [YAMLNode] = []
            while true {
                guard let item = next(&events) else { return nil }
                if item.type == YAML_SEQUENCE_END_EVENT { break }
                guard let node = readNode(startingWith: item, &events, depth: depth + 1) else { return nil }
                items.append(node)
            }
            return YAMLNode(kind: .sequence(items), location: event.location)
        case YAML_MAPPING_START_EVENT:
            var pairs: [(key: YAMLNode, value: YAMLNode)] = []
            var seen: [String: SourceLocation] = [:]
            while true {
                guard let keyEvent = next(&events) else { return nil }
                if keyEvent.type == YAML_MAPPING_END_EVENT { break }
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
            return YAMLNode(kind: .mapping(pairs), location: event.location)
        default:
            error(event.location, "unexpected YAML structure")
            return nil
        }
    }
}

/// One libyaml event, copied out of C memory.
private struct Event {
    var type: yaml_event_type_t
    var location: SourceLocation
    var value: String = ""
    var plain: Bool = false
    var anchor: Bool = false
    var tag: Bool = false
}

private struct ParseFailure: Error {
    var location: SourceLocation
    var message: String
}

/// Pulls events from a libyaml parser, converting marks to 1-based positions.
private struct EventStream {
    var parser: UnsafeMutablePointer<yaml_parser_t>

    init(parser: UnsafeMutablePointer<yaml_parser_t>) {
        self.parser = parser
    }

    mutating func next() -> Result<Event, ParseFailure> {
        var raw = yaml_event_t()
        guard yaml_parser_parse(parser, &raw) == 1 else {
            let p = parser.pointee
            let mark = p.problem_mark
            let problem = p.problem.map { String(cString: $0) } ?? "malformed YAML"
            let context = p.context.map { String(cString: $0) }
            let message = context.map { "invalid YAML: \(problem) \($0)" } ?? "invalid YAML: \(problem)"
            return .failure(ParseFailure(
                location: SourceLocation(line: mark.line + 1, column: mark.column + 1), message: message))
        }
        defer { yaml_event_delete(&raw) }
        let mark = raw.start_mark
        var event = Event(type: raw.type, location: SourceLocation(line: mark.line + 1, column: mark.column + 1))
        switch raw.type {
        case YAML_SCALAR_EVENT:
            let s = raw.data.scalar
            event.value = String(
                decoding: UnsafeBufferPointer(start: s.value, count: s.length), as: UTF8.self)
            event.plain = s.style == YAML_PLAIN_SCALAR_STYLE
            event.anchor = s.anchor != nil
            event.tag = s.tag != nil
        case YAML_SEQUENCE_START_EVENT:
            event.anchor = raw.data.sequence_start.anchor != nil
            event.tag = raw.data.sequence_start.tag != nil
        case YAML_MAPPING_START_EVENT:
            event.anchor = raw.data.mapping_start.anchor != nil
            event.tag = raw.data.mapping_start.tag != nil
        default:
            break
        }
        return .success(event)
    }
}
