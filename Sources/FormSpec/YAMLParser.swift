/// One YAML parsing event: the shape the tree reader consumes.
struct YAMLEvent: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case streamStart, streamEnd, documentStart, documentEnd
        case alias, scalar, sequenceStart, sequenceEnd, mappingStart, mappingEnd
    }

    var kind: Kind
    /// Where the node begins (its anchor or tag, when it has one).
    var start: YAMLMark
    var value: String = ""
    var style: YAMLScalarStyle = .plain
    var hasAnchor = false
    var hasTag = false
}

/// A source of YAML events: this package's parser, or (in tests) libyaml as an oracle.
protocol YAMLEventSource {
    mutating func next() -> Result<YAMLEvent, YAMLSyntaxError>
}

/// Turns tokens into events: a port of libyaml 0.2.5's parser state machine. Like the scanner
/// it keeps its nesting in arrays, never on the call stack.
struct YAMLParser: YAMLEventSource {
    private enum State {
        case streamStart, implicitDocumentStart, documentStart, documentContent, documentEnd
        case blockNode, blockNodeOrIndentlessSequence, flowNode
        case blockSequenceFirstEntry, blockSequenceEntry, indentlessSequenceEntry
        case blockMappingFirstKey, blockMappingKey, blockMappingValue
        case flowSequenceFirstEntry, flowSequenceEntry
        case flowSequenceEntryMappingKey, flowSequenceEntryMappingValue, flowSequenceEntryMappingEnd
        case flowMappingFirstKey, flowMappingKey, flowMappingValue, flowMappingEmptyValue
        case end
    }

    private let scanner: YAMLScanner
    private var state = State.streamStart
    private var states: [State] = []
    private var marks: [YAMLMark] = []
    private var tagHandles: [[UInt8]] = []
    private var failure: YAMLSyntaxError?

    init(_ text: String) {
        scanner = YAMLScanner(Array(text.utf8))
    }

    mutating func next() -> Result<YAMLEvent, YAMLSyntaxError> {
        if let failure { return .failure(failure) }
        if state == .end {
            return .success(YAMLEvent(kind: .streamEnd, start: scanner.mark))
        }
        if let event = step() { return .success(event) }
        let error = failure ?? scanner.error ?? YAMLSyntaxError(problem: "malformed YAML", context: nil, mark: scanner.mark)
        failure = error
        return .failure(error)
    }

    private mutating func fail(_ problem: String, _ mark: YAMLMark, context: String? = nil) -> YAMLEvent? {
        failure = YAMLSyntaxError(problem: problem, context: context, mark: mark)
        return nil
    }

    private mutating func pop() -> State { states.removeLast() }

    private mutating func step() -> YAMLEvent? {
        switch state {
        case .streamStart: return parseStreamStart()
        case .implicitDocumentStart: return parseDocumentStart(implicit: true)
        case .documentStart: return parseDocumentStart(implicit: false)
        case .documentContent: return parseDocumentContent()
        case .documentEnd: return parseDocumentEnd()
        case .blockNode: return parseNode(block: true, indentlessSequence: false)
        case .blockNodeOrIndentlessSequence: return parseNode(block: true, indentlessSequence: true)
        case .flowNode: return parseNode(block: false, indentlessSequence: false)
        case .blockSequenceFirstEntry: return parseBlockSequenceEntry(first: true)
        case .blockSequenceEntry: return parseBlockSequenceEntry(first: false)
        case .indentlessSequenceEntry: return parseIndentlessSequenceEntry()
        case .blockMappingFirstKey: return parseBlockMappingKey(first: true)
        case .blockMappingKey: return parseBlockMappingKey(first: false)
        case .blockMappingValue: return parseBlockMappingValue()
        case .flowSequenceFirstEntry: return parseFlowSequenceEntry(first: true)
        case .flowSequenceEntry: return parseFlowSequenceEntry(first: false)
        case .flowSequenceEntryMappingKey: return parseFlowSequenceEntryMappingKey()
        case .flowSequenceEntryMappingValue: return parseFlowSequenceEntryMappingValue()
        case .flowSequenceEntryMappingEnd: return parseFlowSequenceEntryMappingEnd()
        case .flowMappingFirstKey: return parseFlowMappingKey(first: true)
        case .flowMappingKey: return parseFlowMappingKey(first: false)
        case .flowMappingValue: return parseFlowMappingValue(empty: false)
        case .flowMappingEmptyValue: return parseFlowMappingValue(empty: true)
        case .end: return YAMLEvent(kind: .streamEnd, start: scanner.mark)
        }
    }

    private mutating func parseStreamStart() -> YAMLEvent? {
        guard let token = scanner.peek() else { return nil }
        guard token.kind == .streamStart else { return fail("did not find expected <stream-start>", token.start) }
        state = .implicitDocumentStart
        scanner.skipToken()
        return YAMLEvent(kind: .streamStart, start: token.start)
    }

    private mutating func parseDocumentStart(implicit: Bool) -> YAMLEvent? {
        guard var token = scanner.peek() else { return nil }
        if !implicit {
            while token.kind == .documentEnd {
                scanner.skipToken()
                guard let next = scanner.peek() else { return nil }
                token = next
            }
        }
        if implicit && token.kind != .versionDirective && token.kind != .tagDirective && token.kind != .documentStart
            && token.kind != .streamEnd
        {
            guard processDirectives() else { return nil }
            states.append(.documentEnd)
            state = .blockNode
            return YAMLEvent(kind: .documentStart, start: token.start)
        } else if token.kind != .streamEnd {
            let start = token.start
            guard processDirectives() else { return nil }
            guard let next = scanner.peek() else { return nil }
            if next.kind != .documentStart {
                return fail("did not find expected <document start>", next.start)
            }
            states.append(.documentEnd)
            state = .documentContent
            scanner.skipToken()
            return YAMLEvent(kind: .documentStart, start: start)
        } else {
            state = .end
            scanner.skipToken()
            return YAMLEvent(kind: .streamEnd, start: token.start)
        }
    }

    private mutating func parseDocumentContent() -> YAMLEvent? {
        guard let token = scanner.peek() else { return nil }
        switch token.kind {
        case .versionDirective, .tagDirective, .documentStart, .documentEnd, .streamEnd:
            state = pop()
            return YAMLEvent(kind: .scalar, start: token.start)
        default:
            return parseNode(block: true, indentlessSequence: false)
        }
    }

    private mutating func parseDocumentEnd() -> YAMLEvent? {
        guard let token = scanner.peek() else { return nil }
        if token.kind == .documentEnd { scanner.skipToken() }
        tagHandles.removeAll()
        state = .documentStart
        return YAMLEvent(kind: .documentEnd, start: token.start)
    }

    private mutating func parseNode(block: Bool, indentlessSequence: Bool) -> YAMLEvent? {
        guard var token = scanner.peek() else { return nil }
        if token.kind == .alias {
            state = pop()
            scanner.skipToken()
            return YAMLEvent(kind: .alias, start: token.start, value: String(decoding: token.value, as: UTF8.self))
        }
        let start = token.start
        var hasAnchor = false
        var tagHandle: [UInt8]?
        var tagMark = token.start
        if token.kind == .anchor {
            hasAnchor = true
            scanner.skipToken()
            guard let next = scanner.peek() else { return nil }
            token = next
            if token.kind == .tag {
                tagHandle = token.handle
                tagMark = token.start
                scanner.skipToken()
                guard let next = scanner.peek() else { return nil }
                token = next
            }
        } else if token.kind == .tag {
            tagHandle = token.handle
            tagMark = token.start
            scanner.skipToken()
            guard let next = scanner.peek() else { return nil }
            token = next
            if token.kind == .anchor {
                hasAnchor = true
                scanner.skipToken()
                guard let next = scanner.peek() else { return nil }
                token = next
            }
        }
        if let handle = tagHandle, !handle.isEmpty, !tagHandles.contains(handle) {
            return fail("found undefined tag handle", tagMark, context: "while parsing a node")
        }
        let hasTag = tagHandle != nil
        if indentlessSequence && token.kind == .blockEntry {
            state = .indentlessSequenceEntry
            return YAMLEvent(kind: .sequenceStart, start: start, hasAnchor: hasAnchor, hasTag: hasTag)
        }
        switch token.kind {
        case .scalar:
            state = pop()
            scanner.skipToken()
            return YAMLEvent(
                kind: .scalar, start: start, value: String(decoding: token.value, as: UTF8.self), style: token.style,
                hasAnchor: hasAnchor, hasTag: hasTag)
        case .flowSequenceStart:
            state = .flowSequenceFirstEntry
            return YAMLEvent(kind: .sequenceStart, start: start, hasAnchor: hasAnchor, hasTag: hasTag)
        case .flowMappingStart:
            state = .flowMappingFirstKey
            return YAMLEvent(kind: .mappingStart, start: start, hasAnchor: hasAnchor, hasTag: hasTag)
        case .blockSequenceStart where block:
            state = .blockSequenceFirstEntry
            return YAMLEvent(kind: .sequenceStart, start: start, hasAnchor: hasAnchor, hasTag: hasTag)
        case .blockMappingStart where block:
            state = .blockMappingFirstKey
            return YAMLEvent(kind: .mappingStart, start: start, hasAnchor: hasAnchor, hasTag: hasTag)
        default:
            if hasAnchor || hasTag {
                state = pop()
                return YAMLEvent(kind: .scalar, start: start, hasAnchor: hasAnchor, hasTag: hasTag)
            }
            return fail(
                "did not find expected node content", token.start,
                context: block ? "while parsing a block node" : "while parsing a flow node")
        }
    }

    private mutating func parseBlockSequenceEntry(first: Bool) -> YAMLEvent? {
        if first {
            guard let token = scanner.peek() else { return nil }
            marks.append(token.start)
            scanner.skipToken()
        }
        guard let token = scanner.peek() else { return nil }
        switch token.kind {
        case .blockEntry:
            let mark = token.end
            scanner.skipToken()
            guard let next = scanner.peek() else { return nil }
            if next.kind != .blockEntry && next.kind != .blockEnd {
                states.append(.blockSequenceEntry)
                return parseNode(block: true, indentlessSequence: false)
            }
            state = .blockSequenceEntry
            return YAMLEvent(kind: .scalar, start: mark)
        case .blockEnd:
            state = pop()
            marks.removeLast()
            scanner.skipToken()
            return YAMLEvent(kind: .sequenceEnd, start: token.start)
        default:
            marks.removeLast()
            return fail("did not find expected '-' indicator", token.start, context: "while parsing a block collection")
        }
    }

    private mutating func parseIndentlessSequenceEntry() -> YAMLEvent? {
        guard let token = scanner.peek() else { return nil }
        if token.kind == .blockEntry {
            let mark = token.end
            scanner.skipToken()
            guard let next = scanner.peek() else { return nil }
            if next.kind != .blockEntry && next.kind != .key && next.kind != .value && next.kind != .blockEnd {
                states.append(.indentlessSequenceEntry)
                return parseNode(block: true, indentlessSequence: false)
            }
            state = .indentlessSequenceEntry
            return YAMLEvent(kind: .scalar, start: mark)
        }
        state = pop()
        return YAMLEvent(kind: .sequenceEnd, start: token.start)
    }

    private mutating func parseBlockMappingKey(first: Bool) -> YAMLEvent? {
        if first {
            guard let token = scanner.peek() else { return nil }
            marks.append(token.start)
            scanner.skipToken()
        }
        guard let token = scanner.peek() else { return nil }
        switch token.kind {
        case .key:
            let mark = token.end
            scanner.skipToken()
            guard let next = scanner.peek() else { return nil }
            if next.kind != .key && next.kind != .value && next.kind != .blockEnd {
                states.append(.blockMappingValue)
                return parseNode(block: true, indentlessSequence: true)
            }
            state = .blockMappingValue
            return YAMLEvent(kind: .scalar, start: mark)
        case .blockEnd:
            state = pop()
            marks.removeLast()
            scanner.skipToken()
            return YAMLEvent(kind: .mappingEnd, start: token.start)
        default:
            marks.removeLast()
            return fail("did not find expected key", token.start, context: "while parsing a block mapping")
        }
    }

    private mutating func parseBlockMappingValue() -> YAMLEvent? {
        guard let token = scanner.peek() else { return nil }
        if token.kind == .value {
            let mark = token.end
            scanner.skipToken()
            guard let next = scanner.peek() else { return nil }
            if next.kind != .key && next.kind != .value && next.kind != .blockEnd {
                states.append(.blockMappingKey)
                return parseNode(block: true, indentlessSequence: true)
            }
            state = .blockMappingKey
            return YAMLEvent(kind: .scalar, start: mark)
        }
        state = .blockMappingKey
        return YAMLEvent(kind: .scalar, start: token.start)
    }

    private mutating func parseFlowSequenceEntry(first: Bool) -> YAMLEvent? {
        if first {
            guard let token = scanner.peek() else { return nil }
            marks.append(token.start)
            scanner.skipToken()
        }
        guard var token = scanner.peek() else { return nil }
        if token.kind != .flowSequenceEnd {
            if !first {
                if token.kind == .flowEntry {
                    scanner.skipToken()
                    guard let next = scanner.peek() else { return nil }
                    token = next
                } else {
                    marks.removeLast()
                    return fail("did not find expected ',' or ']'", token.start, context: "while parsing a flow sequence")
                }
            }
            if token.kind == .key {
                state = .flowSequenceEntryMappingKey
                scanner.skipToken()
                return YAMLEvent(kind: .mappingStart, start: token.start)
            } else if token.kind != .flowSequenceEnd {
                states.append(.flowSequenceEntry)
                return parseNode(block: false, indentlessSequence: false)
            }
        }
        state = pop()
        marks.removeLast()
        scanner.skipToken()
        return YAMLEvent(kind: .sequenceEnd, start: token.start)
    }

    private mutating func parseFlowSequenceEntryMappingKey() -> YAMLEvent? {
        guard let token = scanner.peek() else { return nil }
        if token.kind != .value && token.kind != .flowEntry && token.kind != .flowSequenceEnd {
            states.append(.flowSequenceEntryMappingValue)
            return parseNode(block: false, indentlessSequence: false)
        }
        let mark = token.end
        scanner.skipToken()
        state = .flowSequenceEntryMappingValue
        return YAMLEvent(kind: .scalar, start: mark)
    }

    private mutating func parseFlowSequenceEntryMappingValue() -> YAMLEvent? {
        guard var token = scanner.peek() else { return nil }
        if token.kind == .value {
            scanner.skipToken()
            guard let next = scanner.peek() else { return nil }
            token = next
            if token.kind != .flowEntry && token.kind != .flowSequenceEnd {
                states.append(.flowSequenceEntryMappingEnd)
                return parseNode(block: false, indentlessSequence: false)
            }
        }
        state = .flowSequenceEntryMappingEnd
        return YAMLEvent(kind: .scalar, start: token.start)
    }

    private mutating func parseFlowSequenceEntryMappingEnd() -> YAMLEvent? {
        guard let token = scanner.peek() else { return nil }
        state = .flowSequenceEntry
        return YAMLEvent(kind: .mappingEnd, start: token.start)
    }

    private mutating func parseFlowMappingKey(first: Bool) -> YAMLEvent? {
        if first {
            guard let token = scanner.peek() else { return nil }
            marks.append(token.start)
            scanner.skipToken()
        }
        guard var token = scanner.peek() else { return nil }
        if token.kind != .flowMappingEnd {
            if !first {
                if token.kind == .flowEntry {
                    scanner.skipToken()
                    guard let next = scanner.peek() else { return nil }
                    token = next
                } else {
                    marks.removeLast()
                    return fail("did not find expected ',' or '}'", token.start, context: "while parsing a flow mapping")
                }
            }
            if token.kind == .key {
                scanner.skipToken()
                guard let next = scanner.peek() else { return nil }
                token = next
                if token.kind != .value && token.kind != .flowEntry && token.kind != .flowMappingEnd {
                    states.append(.flowMappingValue)
                    return parseNode(block: false, indentlessSequence: false)
                }
                state = .flowMappingValue
                return YAMLEvent(kind: .scalar, start: token.start)
            } else if token.kind != .flowMappingEnd {
                states.append(.flowMappingEmptyValue)
                return parseNode(block: false, indentlessSequence: false)
            }
        }
        state = pop()
        marks.removeLast()
        scanner.skipToken()
        return YAMLEvent(kind: .mappingEnd, start: token.start)
    }

    private mutating func parseFlowMappingValue(empty: Bool) -> YAMLEvent? {
        guard var token = scanner.peek() else { return nil }
        if empty {
            state = .flowMappingKey
            return YAMLEvent(kind: .scalar, start: token.start)
        }
        if token.kind == .value {
            scanner.skipToken()
            guard let next = scanner.peek() else { return nil }
            token = next
            if token.kind != .flowEntry && token.kind != .flowMappingEnd {
                states.append(.flowMappingKey)
                return parseNode(block: false, indentlessSequence: false)
            }
        }
        state = .flowMappingKey
        return YAMLEvent(kind: .scalar, start: token.start)
    }

    /// Reads the directives before a document. The version must be 1.1 or 1.2; a handle is
    /// declared once; `!` and `!!` are always known.
    private mutating func processDirectives() -> Bool {
        var sawVersion = false
        while true {
            guard let token = scanner.peek() else { return false }
            if token.kind == .versionDirective {
                if sawVersion {
                    _ = fail("found duplicate %YAML directive", token.start)
                    return false
                }
                if token.major != 1 || (token.minor != 1 && token.minor != 2) {
                    _ = fail("found incompatible YAML document", token.start)
                    return false
                }
                sawVersion = true
            } else if token.kind == .tagDirective {
                if tagHandles.contains(token.handle) {
                    _ = fail("found duplicate %TAG directive", token.start)
                    return false
                }
                tagHandles.append(token.handle)
            } else {
                break
            }
            scanner.skipToken()
        }
        for handle in [[UInt8(0x21)], [UInt8(0x21), 0x21]] where !tagHandles.contains(handle) {
            tagHandles.append(handle)
        }
        return true
    }
}
