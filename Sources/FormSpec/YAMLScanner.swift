/// A position in YAML text, 0-based, counted in characters the way libyaml counts them (a CR LF
/// pair is two characters of `index`, one line break).
struct YAMLMark: Equatable, Sendable {
    var index = 0
    var line = 0
    var column = 0

    var location: SourceLocation { SourceLocation(line: line + 1, column: column + 1) }
}

/// Why YAML text could not be read: libyaml's wording (`problem`, then the `context` it was
/// found in), so that a spec reads the same whichever reader checked it.
struct YAMLSyntaxError: Error, Equatable, Sendable {
    var problem: String
    var context: String?
    var mark: YAMLMark

    var message: String {
        context.map { "invalid YAML: \(problem) \($0)" } ?? "invalid YAML: \(problem)"
    }
}

/// One lexical token of YAML.
struct YAMLToken: Sendable {
    enum Kind: Equatable, Sendable {
        case streamStart, streamEnd
        case versionDirective, tagDirective
        case documentStart, documentEnd
        case blockSequenceStart, blockMappingStart, blockEnd
        case flowSequenceStart, flowSequenceEnd, flowMappingStart, flowMappingEnd
        case blockEntry, flowEntry, key, value
        case alias, anchor, tag, scalar
    }

    var kind: Kind
    var start: YAMLMark
    var end: YAMLMark
    /// A scalar's text, or a tag's suffix, or a tag directive's prefix.
    var value: [UInt8] = []
    /// A tag's or a tag directive's handle.
    var handle: [UInt8] = []
    var style: YAMLScalarStyle = .plain
    var major = 0
    var minor = 0
}

/// How a scalar was written.
enum YAMLScalarStyle: Sendable, Equatable {
    case plain, singleQuoted, doubleQuoted, literal, folded
}

/// Turns YAML text into tokens: a port of libyaml 0.2.5's scanner (the reference reader of YAML
/// 1.1), rule for rule, so that the spec language keeps the exact grammar, positions and refusals
/// it had when specs were read through libyaml. Nothing recurses: nesting lives in arrays.
final class YAMLScanner {
    /// The text as UTF-8, followed by NULs so that looking a few bytes ahead never leaves it.
    /// A pointer, not an array: the scanner reads it a byte at a time, and in a debug build (the
    /// one the build plugin runs) each read of an array costs a retain and a release.
    private let bytes: UnsafeMutablePointer<UInt8>
    private var pos = 0
    private(set) var mark = YAMLMark()

    private var tokens: [YAMLToken] = []
    private var head = 0
    private(set) var tokensParsed = 0
    private var tokenAvailable = false
    private var streamStartProduced = false
    private(set) var streamEndProduced = false

    private var indent = -1
    private var indents: [Int] = []
    private var simpleKeyAllowed = false
    private var simpleKeys: [SimpleKey] = []
    private var flowLevel = 0
    private(set) var error: YAMLSyntaxError?

    private struct SimpleKey {
        var possible = false
        var required = false
        var tokenNumber = 0
        var mark = YAMLMark()
    }

    /// Reads `utf8`. A byte-order mark at the start of a line is skipped as one character of the
    /// line (libyaml's behaviour when told the text is UTF-8, as the spec reader always did).
    init(_ utf8: [UInt8]) {
        bytes = .allocate(capacity: utf8.count + 12)
        bytes.initialize(repeating: 0, count: utf8.count + 12)
        utf8.withUnsafeBufferPointer { source in
            if let start = source.baseAddress { bytes.update(from: start, count: source.count) }
        }
        checkCharacters(count: utf8.count)
    }

    deinit {
        bytes.deallocate()
    }

    /// libyaml's reader refuses control characters (and so a NUL, which would end the text early)
    /// before it scans anything. Unlike libyaml, which reports the refusal at 1:1, the position
    /// here is the character's own.
    private func checkCharacters(count: Int) {
        var index = 0
        var probe = YAMLMark()
        while index < count {
            let byte = bytes[index]
            let width = Self.width(of: byte)
            var value = UInt32(byte)
            if width > 1 {
                value &= width == 2 ? 0x1F : width == 3 ? 0x0F : 0x07
                for k in 1..<width where index + k < count {
                    value = (value << 6) | UInt32(bytes[index + k] & 0x3F)
                }
            }
            let printable =
                value == 0x09 || value == 0x0A || value == 0x0D || (value >= 0x20 && value <= 0x7E)
                || value == 0x85 || (value >= 0xA0 && value <= 0xD7FF) || (value >= 0xE000 && value <= 0xFFFD)
                || (value >= 0x10000 && value <= 0x10FFFF)
            if !printable || width == 0 {
                error = YAMLSyntaxError(problem: "control characters are not allowed", context: nil, mark: probe)
                return
            }
            if value == 0x0A || (value == 0x0D && bytes[index + 1] != 0x0A) || value == 0x85 || value == 0x2028 || value == 0x2029 {
                probe.line += 1
                probe.column = 0
            } else if value != 0x0D {
                probe.column += 1
            }
            probe.index += 1
            index += max(width, 1)
        }
    }

    // MARK: - The token queue, as the parser sees it

    /// The next token, scanning as far ahead as simple keys need; nil after an error.
    func peek() -> YAMLToken? {
        if error != nil { return nil }
        if !tokenAvailable {
            guard fetchMoreTokens() else { return nil }
        }
        return tokens[head]
    }

    /// Consumes the token `peek` returned.
    func skipToken() {
        tokenAvailable = false
        tokensParsed += 1
        streamEndProduced = tokens[head].kind == .streamEnd
        head += 1
        if head > 64, head * 2 > tokens.count {
            tokens.removeFirst(head)
            head = 0
        }
    }

    private var queued: Int { tokens.count - head }

    private func enqueue(_ token: YAMLToken) {
        tokens.append(token)
    }

    private func insert(_ token: YAMLToken, at number: Int) {
        tokens.insert(token, at: head + number - tokensParsed)
    }

    private func fail(_ context: String?, _ problem: String) -> Bool {
        error = YAMLSyntaxError(problem: problem, context: context, mark: mark)
        return false
    }

    private func fetchMoreTokens() -> Bool {
        while true {
            var needMore = false
            if queued == 0 {
                needMore = true
            } else {
                guard staleSimpleKeys() else { return false }
                for key in simpleKeys where key.possible && key.tokenNumber == tokensParsed {
                    needMore = true
                    break
                }
            }
            if !needMore { break }
            guard fetchNextToken() else { return false }
        }
        tokenAvailable = true
        return true
    }

    // MARK: - Characters

    @inline(__always) private func at(_ k: Int) -> UInt8 { bytes[pos + k] }
    @inline(__always) private func check(_ c: UInt8, _ k: Int = 0) -> Bool { bytes[pos + k] == c }
    private func isAlpha(_ k: Int = 0) -> Bool {
        let c = at(k)
        return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D
    }
    private func isDigit(_ k: Int = 0) -> Bool { at(k) >= 0x30 && at(k) <= 0x39 }
    private func isHex(_ k: Int = 0) -> Bool {
        let c = at(k)
        return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
    }
    private func hexValue(_ k: Int) -> UInt32 {
        let c = at(k)
        if c >= 0x41 && c <= 0x46 { return UInt32(c - 0x41 + 10) }
        if c >= 0x61 && c <= 0x66 { return UInt32(c - 0x61 + 10) }
        return UInt32(c &- 0x30)
    }
    private func isSpace(_ k: Int = 0) -> Bool { at(k) == 0x20 }
    private func isTab(_ k: Int = 0) -> Bool { at(k) == 0x09 }
    private func isBlank(_ k: Int = 0) -> Bool { at(k) == 0x20 || at(k) == 0x09 }
    private func isZ(_ k: Int = 0) -> Bool { at(k) == 0 }
    private func isBOM(_ k: Int = 0) -> Bool { at(k) == 0xEF && at(k + 1) == 0xBB && at(k + 2) == 0xBF }
    private func isBreak(_ k: Int = 0) -> Bool {
        let c = at(k)
        if c == 0x0D || c == 0x0A { return true }
        if c == 0xC2 { return at(k + 1) == 0x85 }
        if c == 0xE2 { return at(k + 1) == 0x80 && (at(k + 2) == 0xA8 || at(k + 2) == 0xA9) }
        return false
    }
    private func isBreakZ(_ k: Int = 0) -> Bool { isBreak(k) || isZ(k) }
    private func isBlankZ(_ k: Int = 0) -> Bool { isBlank(k) || isBreakZ(k) }
    private func isCRLF() -> Bool { at(0) == 0x0D && at(1) == 0x0A }

    private static func width(of byte: UInt8) -> Int {
        byte & 0x80 == 0 ? 1 : byte & 0xE0 == 0xC0 ? 2 : byte & 0xF0 == 0xE0 ? 3 : byte & 0xF8 == 0xF0 ? 4 : 0
    }

    private func skip() {
        mark.index += 1
        mark.column += 1
        pos += Self.width(of: at(0))
    }

    private func skipLine() {
        if isCRLF() {
            mark.index += 2
            mark.column = 0
            mark.line += 1
            pos += 2
        } else if isBreak() {
            mark.index += 1
            mark.column = 0
            mark.line += 1
            pos += Self.width(of: at(0))
        }
    }

    private func read(into string: inout [UInt8]) {
        let width = Self.width(of: at(0))
        for k in 0..<width { string.append(bytes[pos + k]) }
        pos += width
        mark.index += 1
        mark.column += 1
    }

    private func readLine(into string: inout [UInt8]) {
        if at(0) == 0x0D && at(1) == 0x0A {
            string.append(0x0A)
            pos += 2
            mark.index += 2
        } else if at(0) == 0x0D || at(0) == 0x0A {
            string.append(0x0A)
            pos += 1
            mark.index += 1
        } else if at(0) == 0xC2 && at(1) == 0x85 {
            string.append(0x0A)
            pos += 2
            mark.index += 1
        } else if at(0) == 0xE2 && at(1) == 0x80 && (at(2) == 0xA8 || at(2) == 0xA9) {
            string.append(bytes[pos])
            string.append(bytes[pos + 1])
            string.append(bytes[pos + 2])
            pos += 3
            mark.index += 1
        } else {
            return
        }
        mark.column = 0
        mark.line += 1
    }

    private func isDocumentIndicator() -> Bool {
        mark.column == 0
            && ((check(0x2D, 0) && check(0x2D, 1) && check(0x2D, 2)) || (check(0x2E, 0) && check(0x2E, 1) && check(0x2E, 2)))
            && isBlankZ(3)
    }

    // MARK: - The dispatcher

    private func fetchNextToken() -> Bool {
        if !streamStartProduced { return fetchStreamStart() }
        guard scanToNextToken() else { return false }
        guard staleSimpleKeys() else { return false }
        unrollIndent(mark.column)

        if isZ() { return fetchStreamEnd() }
        if mark.column == 0 && check(0x25) { return fetchDirective() }
        if mark.column == 0 && check(0x2D) && check(0x2D, 1) && check(0x2D, 2) && isBlankZ(3) {
            return fetchDocumentIndicator(.documentStart)
        }
        if mark.column == 0 && check(0x2E) && check(0x2E, 1) && check(0x2E, 2) && isBlankZ(3) {
            return fetchDocumentIndicator(.documentEnd)
        }
        let c = at(0)
        switch c {
        case 0x5B: return fetchFlowCollectionStart(.flowSequenceStart)
        case 0x7B: return fetchFlowCollectionStart(.flowMappingStart)
        case 0x5D: return fetchFlowCollectionEnd(.flowSequenceEnd)
        case 0x7D: return fetchFlowCollectionEnd(.flowMappingEnd)
        case 0x2C: return fetchFlowEntry()
        default: break
        }
        if c == 0x2D && isBlankZ(1) { return fetchBlockEntry() }
        if c == 0x3F && (flowLevel > 0 || isBlankZ(1)) { return fetchKey() }
        if c == 0x3A && (flowLevel > 0 || isBlankZ(1)) { return fetchValue() }
        if c == 0x2A { return fetchAnchor(.alias) }
        if c == 0x26 { return fetchAnchor(.anchor) }
        if c == 0x21 { return fetchTag() }
        if c == 0x7C && flowLevel == 0 { return fetchBlockScalar(literal: true) }
        if c == 0x3E && flowLevel == 0 { return fetchBlockScalar(literal: false) }
        if c == 0x27 { return fetchFlowScalar(single: true) }
        if c == 0x22 { return fetchFlowScalar(single: false) }

        let indicator: Bool
        switch c {
        case 0x2D, 0x3F, 0x3A, 0x2C, 0x5B, 0x5D, 0x7B, 0x7D, 0x23, 0x26, 0x2A, 0x21, 0x7C, 0x3E, 0x27, 0x22, 0x25, 0x40, 0x60:
            indicator = true
        default:
            indicator = false
        }
        if !(isBlankZ() || indicator)
            || (c == 0x2D && !isBlank(1))
            || (flowLevel == 0 && (c == 0x3F || c == 0x3A) && !isBlankZ(1))
        {
            return fetchPlainScalar()
        }
        return fail("while scanning for the next token", "found character that cannot start any token")
    }

    // MARK: - Simple keys and indentation

    private func staleSimpleKeys() -> Bool {
        for index in simpleKeys.indices {
            let key = simpleKeys[index]
            if key.possible && (key.mark.line < mark.line || key.mark.index + 1024 < mark.index) {
                if key.required {
                    error = YAMLSyntaxError(problem: "could not find expected ':'", context: "while scanning a simple key", mark: mark)
                    return false
                }
                simpleKeys[index].possible = false
            }
        }
        return true
    }

    private func saveSimpleKey() -> Bool {
        let required = flowLevel == 0 && indent == mark.column
        if simpleKeyAllowed {
            let key = SimpleKey(possible: true, required: required, tokenNumber: tokensParsed + queued, mark: mark)
            guard removeSimpleKey() else { return false }
            simpleKeys[simpleKeys.count - 1] = key
        }
        return true
    }

    private func removeSimpleKey() -> Bool {
        let last = simpleKeys.count - 1
        if simpleKeys[last].possible && simpleKeys[last].required {
            return fail("while scanning a simple key", "could not find expected ':'")
        }
        simpleKeys[last].possible = false
        return true
    }

    private func increaseFlowLevel() {
        simpleKeys.append(SimpleKey())
        flowLevel += 1
    }

    private func decreaseFlowLevel() {
        if flowLevel > 0 {
            flowLevel -= 1
            simpleKeys.removeLast()
        }
    }

    private func rollIndent(_ column: Int, number: Int?, _ kind: YAMLToken.Kind, _ at: YAMLMark) {
        if flowLevel > 0 { return }
        if indent < column {
            indents.append(indent)
            indent = column
            let token = YAMLToken(kind: kind, start: at, end: at)
            if let number { insert(token, at: number) } else { enqueue(token) }
        }
    }

    private func unrollIndent(_ column: Int) {
        if flowLevel > 0 { return }
        while indent > column {
            enqueue(YAMLToken(kind: .blockEnd, start: mark, end: mark))
            indent = indents.removeLast()
        }
    }

    // MARK: - Fetchers

    private func fetchStreamStart() -> Bool {
        indent = -1
        simpleKeys.append(SimpleKey())
        simpleKeyAllowed = true
        streamStartProduced = true
        enqueue(YAMLToken(kind: .streamStart, start: mark, end: mark))
        return true
    }

    private func fetchStreamEnd() -> Bool {
        if mark.column != 0 {
            mark.column = 0
            mark.line += 1
        }
        unrollIndent(-1)
        guard removeSimpleKey() else { return false }
        simpleKeyAllowed = false
        enqueue(YAMLToken(kind: .streamEnd, start: mark, end: mark))
        return true
    }

    private func fetchDirective() -> Bool {
        unrollIndent(-1)
        guard removeSimpleKey() else { return false }
        simpleKeyAllowed = false
        guard let token = scanDirective() else { return false }
        enqueue(token)
        return true
    }

    private func fetchDocumentIndicator(_ kind: YAMLToken.Kind) -> Bool {
        unrollIndent(-1)
        guard removeSimpleKey() else { return false }
        simpleKeyAllowed = false
        let start = mark
        skip()
        skip()
        skip()
        enqueue(YAMLToken(kind: kind, start: start, end: mark))
        return true
    }

    private func fetchFlowCollectionStart(_ kind: YAMLToken.Kind) -> Bool {
        guard saveSimpleKey() else { return false }
        increaseFlowLevel()
        simpleKeyAllowed = true
        let start = mark
        skip()
        enqueue(YAMLToken(kind: kind, start: start, end: mark))
        return true
    }

    private func fetchFlowCollectionEnd(_ kind: YAMLToken.Kind) -> Bool {
        guard removeSimpleKey() else { return false }
        decreaseFlowLevel()
        simpleKeyAllowed = false
        let start = mark
        skip()
        enqueue(YAMLToken(kind: kind, start: start, end: mark))
        return true
    }

    private func fetchFlowEntry() -> Bool {
        guard removeSimpleKey() else { return false }
        simpleKeyAllowed = true
        let start = mark
        skip()
        enqueue(YAMLToken(kind: .flowEntry, start: start, end: mark))
        return true
    }

    private func fetchBlockEntry() -> Bool {
        if flowLevel == 0 {
            if !simpleKeyAllowed {
                return fail(nil, "block sequence entries are not allowed in this context")
            }
            rollIndent(mark.column, number: nil, .blockSequenceStart, mark)
        }
        guard removeSimpleKey() else { return false }
        simpleKeyAllowed = true
        let start = mark
        skip()
        enqueue(YAMLToken(kind: .blockEntry, start: start, end: mark))
        return true
    }

    private func fetchKey() -> Bool {
        if flowLevel == 0 {
            if !simpleKeyAllowed {
                return fail(nil, "mapping keys are not allowed in this context")
            }
            rollIndent(mark.column, number: nil, .blockMappingStart, mark)
        }
        guard removeSimpleKey() else { return false }
        simpleKeyAllowed = flowLevel == 0
        let start = mark
        skip()
        enqueue(YAMLToken(kind: .key, start: start, end: mark))
        return true
    }

    private func fetchValue() -> Bool {
        let last = simpleKeys.count - 1
        let key = simpleKeys[last]
        if key.possible {
            insert(YAMLToken(kind: .key, start: key.mark, end: key.mark), at: key.tokenNumber)
            rollIndent(key.mark.column, number: key.tokenNumber, .blockMappingStart, key.mark)
            simpleKeys[last].possible = false
            simpleKeyAllowed = false
        } else {
            if flowLevel == 0 {
                if !simpleKeyAllowed {
                    return fail(nil, "mapping values are not allowed in this context")
                }
                rollIndent(mark.column, number: nil, .blockMappingStart, mark)
            }
            simpleKeyAllowed = flowLevel == 0
        }
        let start = mark
        skip()
        enqueue(YAMLToken(kind: .value, start: start, end: mark))
        return true
    }

    private func fetchAnchor(_ kind: YAMLToken.Kind) -> Bool {
        guard saveSimpleKey() else { return false }
        simpleKeyAllowed = false
        guard let token = scanAnchor(kind) else { return false }
        enqueue(token)
        return true
    }

    private func fetchTag() -> Bool {
        guard saveSimpleKey() else { return false }
        simpleKeyAllowed = false
        guard let token = scanTag() else { return false }
        enqueue(token)
        return true
    }

    private func fetchBlockScalar(literal: Bool) -> Bool {
        guard removeSimpleKey() else { return false }
        simpleKeyAllowed = true
        guard let token = scanBlockScalar(literal: literal) else { return false }
        enqueue(token)
        return true
    }

    private func fetchFlowScalar(single: Bool) -> Bool {
        guard saveSimpleKey() else { return false }
        simpleKeyAllowed = false
        guard let token = scanFlowScalar(single: single) else { return false }
        enqueue(token)
        return true
    }

    private func fetchPlainScalar() -> Bool {
        guard saveSimpleKey() else { return false }
        simpleKeyAllowed = false
        guard let token = scanPlainScalar() else { return false }
        enqueue(token)
        return true
    }

    // MARK: - Scanners

    private func scanToNextToken() -> Bool {
        while true {
            if mark.column == 0 && isBOM() { skip() }
            while check(0x20) || ((flowLevel > 0 || !simpleKeyAllowed) && check(0x09)) {
                skip()
            }
            if check(0x23) {
                while !isBreakZ() { skip() }
            }
            if isBreak() {
                skipLine()
                if flowLevel == 0 { simpleKeyAllowed = true }
            } else {
                break
            }
        }
        return true
    }

    private func scanDirective() -> YAMLToken? {
        let start = mark
        skip()
        var name: [UInt8] = []
        while isAlpha() { read(into: &name) }
        if name.isEmpty {
            _ = fail("while scanning a directive", "could not find expected directive name")
            return nil
        }
        if !isBlankZ() {
            _ = fail("while scanning a directive", "found unexpected non-alphabetical character")
            return nil
        }
        var token: YAMLToken
        if name == Array("YAML".utf8) {
            while isBlank() { skip() }
            guard let major = scanVersionNumber() else { return nil }
            if !check(0x2E) {
                _ = fail("while scanning a %YAML directive", "did not find expected digit or '.' character")
                return nil
            }
            skip()
            guard let minor = scanVersionNumber() else { return nil }
            token = YAMLToken(kind: .versionDirective, start: start, end: mark, major: major, minor: minor)
        } else if name == Array("TAG".utf8) {
            while isBlank() { skip() }
            guard let handle = scanTagHandle(directive: true) else { return nil }
            if !isBlank() {
                _ = fail("while scanning a %TAG directive", "did not find expected whitespace")
                return nil
            }
            while isBlank() { skip() }
            guard let prefix = scanTagURI(uriChar: true, directive: true, head: nil) else { return nil }
            if !isBlankZ() {
                _ = fail("while scanning a %TAG directive", "did not find expected whitespace or line break")
                return nil
            }
            token = YAMLToken(kind: .tagDirective, start: start, end: mark, value: prefix, handle: handle)
        } else {
            error = YAMLSyntaxError(problem: "found unknown directive name", context: "while scanning a directive", mark: mark)
            return nil
        }
        while isBlank() { skip() }
        if check(0x23) {
            while !isBreakZ() { skip() }
        }
        if !isBreakZ() {
            _ = fail("while scanning a directive", "did not find expected comment or line break")
            return nil
        }
        if isBreak() { skipLine() }
        return token
    }

    private func scanVersionNumber() -> Int? {
        var value = 0
        var length = 0
        while isDigit() {
            length += 1
            if length > 9 {
                _ = fail("while scanning a %YAML directive", "found extremely long version number")
                return nil
            }
            value = value * 10 + Int(at(0) - 0x30)
            skip()
        }
        if length == 0 {
            _ = fail("while scanning a %YAML directive", "did not find expected version number")
            return nil
        }
        return value
    }

    private func scanAnchor(_ kind: YAMLToken.Kind) -> YAMLToken? {
        let start = mark
        skip()
        var name: [UInt8] = []
        while isAlpha() { read(into: &name) }
        let end = mark
        let c = at(0)
        if name.isEmpty
            || !(isBlankZ() || c == 0x3F || c == 0x3A || c == 0x2C || c == 0x5D || c == 0x7D || c == 0x25 || c == 0x40 || c == 0x60)
        {
            _ = fail(
                kind == .anchor ? "while scanning an anchor" : "while scanning an alias",
                "did not find expected alphabetic or numeric character")
            return nil
        }
        return YAMLToken(kind: kind, start: start, end: end, value: name)
    }

    private func scanTag() -> YAMLToken? {
        let start = mark
        var handle: [UInt8]
        var suffix: [UInt8]
        if check(0x3C, 1) {
            handle = []
            skip()
            skip()
            guard let uri = scanTagURI(uriChar: true, directive: false, head: nil) else { return nil }
            suffix = uri
            if !check(0x3E) {
                _ = fail("while scanning a tag", "did not find the expected '>'")
                return nil
            }
            skip()
        } else {
            guard let first = scanTagHandle(directive: false) else { return nil }
            if first.count > 1 && first[0] == 0x21 && first[first.count - 1] == 0x21 {
                handle = first
                guard let uri = scanTagURI(uriChar: false, directive: false, head: nil) else { return nil }
                suffix = uri
            } else {
                guard let uri = scanTagURI(uriChar: false, directive: false, head: first) else { return nil }
                handle = [0x21]
                suffix = uri
                if suffix.isEmpty {
                    swap(&handle, &suffix)
                }
            }
        }
        if !isBlankZ() {
            if flowLevel == 0 || !check(0x2C) {
                _ = fail("while scanning a tag", "did not find expected whitespace or line break")
                return nil
            }
        }
        return YAMLToken(kind: .tag, start: start, end: mark, value: suffix, handle: handle)
    }

    private func scanTagHandle(directive: Bool) -> [UInt8]? {
        if !check(0x21) {
            _ = fail(directive ? "while scanning a tag directive" : "while scanning a tag", "did not find expected '!'")
            return nil
        }
        var string: [UInt8] = []
        read(into: &string)
        while isAlpha() { read(into: &string) }
        if check(0x21) {
            read(into: &string)
        } else if directive && string != [0x21] {
            _ = fail("while parsing a tag directive", "did not find expected '!'")
            return nil
        }
        return string
    }

    private func scanTagURI(uriChar: Bool, directive: Bool, head: [UInt8]?) -> [UInt8]? {
        var length = head?.count ?? 0
        var string: [UInt8] = []
        if let head, head.count > 1 { string.append(contentsOf: head[1...]) }
        while true {
            let c = at(0)
            let allowed: Bool
            switch c {
            case 0x3B, 0x2F, 0x3F, 0x3A, 0x40, 0x26, 0x3D, 0x2B, 0x24, 0x2E, 0x25, 0x21, 0x7E, 0x2A, 0x27, 0x28, 0x29:
                allowed = true
            case 0x2C, 0x5B, 0x5D:
                allowed = uriChar
            default:
                allowed = isAlpha()
            }
            if !allowed { break }
            if c == 0x25 {
                guard scanURIEscapes(directive: directive, into: &string) else { return nil }
            } else {
                read(into: &string)
            }
            length += 1
        }
        if length == 0 {
            _ = fail(directive ? "while parsing a %TAG directive" : "while parsing a tag", "did not find expected tag URI")
            return nil
        }
        return string
    }

    private func scanURIEscapes(directive: Bool, into string: inout [UInt8]) -> Bool {
        let context = directive ? "while parsing a %TAG directive" : "while parsing a tag"
        var width = 0
        repeat {
            if !(check(0x25) && isHex(1) && isHex(2)) {
                return fail(context, "did not find URI escaped octet")
            }
            let octet = UInt8((hexValue(1) << 4) + hexValue(2))
            if width == 0 {
                width = Self.width(of: octet)
                if width == 0 {
                    return fail(context, "found an incorrect leading UTF-8 octet")
                }
            } else if octet & 0xC0 != 0x80 {
                return fail(context, "found an incorrect trailing UTF-8 octet")
            }
            string.append(octet)
            skip()
            skip()
            skip()
            width -= 1
        } while width > 0
        return true
    }

    private func scanBlockScalar(literal: Bool) -> YAMLToken? {
        var string: [UInt8] = []
        var leadingBreak: [UInt8] = []
        var trailingBreaks: [UInt8] = []
        var chomping = 0
        var increment = 0
        var blockIndent = 0
        var leadingBlank = false
        var trailingBlank = false

        let start = mark
        skip()
        if check(0x2B) || check(0x2D) {
            chomping = check(0x2B) ? 1 : -1
            skip()
            if isDigit() {
                if check(0x30) {
                    _ = fail("while scanning a block scalar", "found an indentation indicator equal to 0")
                    return nil
                }
                increment = Int(at(0) - 0x30)
                skip()
            }
        } else if isDigit() {
            if check(0x30) {
                _ = fail("while scanning a block scalar", "found an indentation indicator equal to 0")
                return nil
            }
            increment = Int(at(0) - 0x30)
            skip()
            if check(0x2B) || check(0x2D) {
                chomping = check(0x2B) ? 1 : -1
                skip()
            }
        }
        while isBlank() { skip() }
        if check(0x23) {
            while !isBreakZ() { skip() }
        }
        if !isBreakZ() {
            _ = fail("while scanning a block scalar", "did not find expected comment or line break")
            return nil
        }
        if isBreak() { skipLine() }
        var end = mark
        if increment > 0 {
            blockIndent = indent >= 0 ? indent + increment : increment
        }
        guard scanBlockScalarBreaks(indent: &blockIndent, breaks: &trailingBreaks, end: &end) else { return nil }

        while mark.column == blockIndent && !isZ() {
            trailingBlank = isBlank()
            if !literal && leadingBreak.first == 0x0A && !leadingBlank && !trailingBlank {
                if trailingBreaks.isEmpty { string.append(0x20) }
                leadingBreak.removeAll(keepingCapacity: true)
            } else {
                string.append(contentsOf: leadingBreak)
                leadingBreak.removeAll(keepingCapacity: true)
            }
            string.append(contentsOf: trailingBreaks)
            trailingBreaks.removeAll(keepingCapacity: true)
            leadingBlank = isBlank()
            while !isBreakZ() { read(into: &string) }
            readLine(into: &leadingBreak)
            guard scanBlockScalarBreaks(indent: &blockIndent, breaks: &trailingBreaks, end: &end) else { return nil }
        }
        if chomping != -1 { string.append(contentsOf: leadingBreak) }
        if chomping == 1 { string.append(contentsOf: trailingBreaks) }
        return YAMLToken(kind: .scalar, start: start, end: end, value: string, style: literal ? .literal : .folded)
    }

    private func scanBlockScalarBreaks(indent blockIndent: inout Int, breaks: inout [UInt8], end: inout YAMLMark) -> Bool {
        var maxIndent = 0
        end = mark
        while true {
            while (blockIndent == 0 || mark.column < blockIndent) && isSpace() { skip() }
            if mark.column > maxIndent { maxIndent = mark.column }
            if (blockIndent == 0 || mark.column < blockIndent) && isTab() {
                return fail("while scanning a block scalar", "found a tab character where an indentation space is expected")
            }
            if !isBreak() { break }
            readLine(into: &breaks)
            end = mark
        }
        if blockIndent == 0 {
            blockIndent = max(maxIndent, indent + 1, 1)
        }
        return true
    }

    private func scanFlowScalar(single: Bool) -> YAMLToken? {
        var string: [UInt8] = []
        var leadingBreak: [UInt8] = []
        var trailingBreaks: [UInt8] = []
        var whitespaces: [UInt8] = []
        let quote: UInt8 = single ? 0x27 : 0x22
        let start = mark
        skip()
        while true {
            if isDocumentIndicator() {
                _ = fail("while scanning a quoted scalar", "found unexpected document indicator")
                return nil
            }
            if isZ() {
                _ = fail("while scanning a quoted scalar", "found unexpected end of stream")
                return nil
            }
            var leadingBlanks = false
            while !isBlankZ() {
                if single && check(0x27) && check(0x27, 1) {
                    string.append(0x27)
                    skip()
                    skip()
                } else if check(quote) {
                    break
                } else if !single && check(0x5C) && isBreak(1) {
                    skip()
                    skipLine()
                    leadingBlanks = true
                    break
                } else if !single && check(0x5C) {
                    var codeLength = 0
                    switch at(1) {
                    case 0x30: string.append(0)
                    case 0x61: string.append(0x07)
                    case 0x62: string.append(0x08)
                    case 0x74, 0x09: string.append(0x09)
                    case 0x6E: string.append(0x0A)
                    case 0x76: string.append(0x0B)
                    case 0x66: string.append(0x0C)
                    case 0x72: string.append(0x0D)
                    case 0x65: string.append(0x1B)
                    case 0x20: string.append(0x20)
                    case 0x22: string.append(0x22)
                    case 0x2F: string.append(0x2F)
                    case 0x5C: string.append(0x5C)
                    case 0x4E: string.append(contentsOf: [0xC2, 0x85])
                    case 0x5F: string.append(contentsOf: [0xC2, 0xA0])
                    case 0x4C: string.append(contentsOf: [0xE2, 0x80, 0xA8])
                    case 0x50: string.append(contentsOf: [0xE2, 0x80, 0xA9])
                    case 0x78: codeLength = 2
                    case 0x75: codeLength = 4
                    case 0x55: codeLength = 8
                    default:
                        _ = fail("while parsing a quoted scalar", "found unknown escape character")
                        return nil
                    }
                    skip()
                    skip()
                    if codeLength > 0 {
                        var value: UInt32 = 0
                        for k in 0..<codeLength {
                            if !isHex(k) {
                                _ = fail("while parsing a quoted scalar", "did not find expected hexdecimal number")
                                return nil
                            }
                            value = (value << 4) + hexValue(k)
                        }
                        if (value >= 0xD800 && value <= 0xDFFF) || value > 0x10FFFF {
                            _ = fail("while parsing a quoted scalar", "found invalid Unicode character escape code")
                            return nil
                        }
                        if value <= 0x7F {
                            string.append(UInt8(value))
                        } else if value <= 0x7FF {
                            string.append(UInt8(0xC0 + (value >> 6)))
                            string.append(UInt8(0x80 + (value & 0x3F)))
                        } else if value <= 0xFFFF {
                            string.append(UInt8(0xE0 + (value >> 12)))
                            string.append(UInt8(0x80 + ((value >> 6) & 0x3F)))
                            string.append(UInt8(0x80 + (value & 0x3F)))
                        } else {
                            string.append(UInt8(0xF0 + (value >> 18)))
                            string.append(UInt8(0x80 + ((value >> 12) & 0x3F)))
                            string.append(UInt8(0x80 + ((value >> 6) & 0x3F)))
                            string.append(UInt8(0x80 + (value & 0x3F)))
                        }
                        for _ in 0..<codeLength { skip() }
                    }
                } else {
                    read(into: &string)
                }
            }
            if check(quote) { break }
            while isBlank() || isBreak() {
                if isBlank() {
                    if !leadingBlanks { read(into: &whitespaces) } else { skip() }
                } else if !leadingBlanks {
                    whitespaces.removeAll(keepingCapacity: true)
                    readLine(into: &leadingBreak)
                    leadingBlanks = true
                } else {
                    readLine(into: &trailingBreaks)
                }
            }
            if leadingBlanks {
                Self.foldBreaks(into: &string, leading: &leadingBreak, trailing: &trailingBreaks)
            } else {
                string.append(contentsOf: whitespaces)
                whitespaces.removeAll(keepingCapacity: true)
            }
        }
        skip()
        return YAMLToken(kind: .scalar, start: start, end: mark, value: string, style: single ? .singleQuoted : .doubleQuoted)
    }

    /// Joins the line breaks a quoted or plain scalar spans: one break folds into a space, more
    /// keep all but the first; a break that is not a line feed (LS, PS) is kept as it is.
    private static func foldBreaks(into string: inout [UInt8], leading: inout [UInt8], trailing: inout [UInt8]) {
        if leading.first == 0x0A {
            if trailing.isEmpty {
                string.append(0x20)
            } else {
                string.append(contentsOf: trailing)
            }
        } else {
            string.append(contentsOf: leading)
            string.append(contentsOf: trailing)
        }
        leading.removeAll(keepingCapacity: true)
        trailing.removeAll(keepingCapacity: true)
    }

    private func scanPlainScalar() -> YAMLToken? {
        var string: [UInt8] = []
        var leadingBreak: [UInt8] = []
        var trailingBreaks: [UInt8] = []
        var whitespaces: [UInt8] = []
        var leadingBlanks = false
        let scalarIndent = indent + 1
        let start = mark
        var end = mark
        while true {
            if isDocumentIndicator() { break }
            if check(0x23) { break }
            while !isBlankZ() {
                if flowLevel > 0 && check(0x3A) {
                    let next = at(1)
                    if next == 0x2C || next == 0x3F || next == 0x5B || next == 0x5D || next == 0x7B || next == 0x7D {
                        error = YAMLSyntaxError(problem: "found unexpected ':'", context: "while scanning a plain scalar", mark: mark)
                        return nil
                    }
                }
                let c = at(0)
                if (c == 0x3A && isBlankZ(1)) || (flowLevel > 0 && (c == 0x2C || c == 0x5B || c == 0x5D || c == 0x7B || c == 0x7D)) {
                    break
                }
                if leadingBlanks || !whitespaces.isEmpty {
                    if leadingBlanks {
                        Self.foldBreaks(into: &string, leading: &leadingBreak, trailing: &trailingBreaks)
                        leadingBlanks = false
                    } else {
                        string.append(contentsOf: whitespaces)
                        whitespaces.removeAll(keepingCapacity: true)
                    }
                }
                read(into: &string)
                end = mark
            }
            if !(isBlank() || isBreak()) { break }
            while isBlank() || isBreak() {
                if isBlank() {
                    if leadingBlanks && mark.column < scalarIndent && isTab() {
                        error = YAMLSyntaxError(
                            problem: "found a tab character that violates indentation", context: "while scanning a plain scalar", mark: mark
                        )
                        return nil
                    }
                    if !leadingBlanks { read(into: &whitespaces) } else { skip() }
                } else if !leadingBlanks {
                    whitespaces.removeAll(keepingCapacity: true)
                    readLine(into: &leadingBreak)
                    leadingBlanks = true
                } else {
                    readLine(into: &trailingBreaks)
                }
            }
            if flowLevel == 0 && mark.column < scalarIndent { break }
        }
        if leadingBlanks { simpleKeyAllowed = true }
        return YAMLToken(kind: .scalar, start: start, end: end, value: string, style: .plain)
    }
}
