/// A `pattern` rule compiled for matching without Foundation's regular-expression engine: the
/// common part of the portable subset (literals, `.`, `\d \D \w \W \s \S \n \t \r`, escaped ASCII
/// punctuation, simple classes with ranges, groups, alternation and greedy quantifiers) run as a
/// Pike machine, in time linear in the value. It gives the answer `NSRegularExpression` gives:
/// the first match found from the start (alternatives in order, quantifiers greedy) must cover
/// the whole value.
///
/// Anything else is not compiled (`init` returns nil) and the caller uses `NSRegularExpression`
/// as before: nested or intersected classes, other escapes, a repeated part that can match
/// nothing, a program over `maxInstructions`. So it does for a value where `\d \w \s` (or their
/// negations) would judge a scalar beyond ASCII (`matchesWhole` returns nil).
/// `NSRegularExpression` took about 1.8 µs per value; ten order lines made it most of a 2 KB
/// order's validation.
struct PatternMatcher: Sendable {
    /// The most instructions a compiled pattern may have (repetition bounds multiply a group's).
    static let maxInstructions = 20_000

    enum ClassEscape: Sendable {
        case digit, word, space

        /// ICU's answer for an ASCII scalar (`\d` is 0-9, `\w` letters, digits and `_`, `\s`
        /// tab to carriage return and space); nil beyond ASCII, where ICU's Unicode tables (`\p{Nd}`,
        /// `\p{Alphabetic}`, `\p{White_Space}`…) decide, and the Swift runtime's own tables can be
        /// of another Unicode version (they differ on scalars such as U+1ACF and U+088F).
        func contains(_ scalar: Unicode.Scalar) -> Bool? {
            let value = scalar.value
            guard value < 0x80 else { return nil }
            switch self {
            case .digit:
                return (0x30...0x39).contains(value)
            case .word:
                return (0x30...0x39).contains(value) || (0x41...0x5A).contains(value) || (0x61...0x7A).contains(value) || value == 0x5F
            case .space:
                return (0x09...0x0D).contains(value) || value == 0x20
            }
        }
    }

    /// A class: ranges and class escapes (each possibly negated), the whole possibly negated.
    struct ScalarSet: Sendable {
        var ranges: [ClosedRange<UInt32>] = []
        var escapes: [(ClassEscape, negated: Bool)] = []
        var negated = false

        /// Nil when a class escape would have to judge a scalar beyond ASCII.
        func contains(_ scalar: Unicode.Scalar) -> Bool? {
            var found = ranges.contains { $0.contains(scalar.value) }
            if !found {
                for (escape, negated) in escapes {
                    guard let inside = escape.contains(scalar) else { return nil }
                    if inside != negated {
                        found = true
                        break
                    }
                }
            }
            return found != negated
        }
    }

    enum Instruction: Sendable {
        case scalar(Unicode.Scalar)
        case set(ScalarSet)
        /// `.`: anything but a line terminator.
        case any
        /// Try the first target, then the second (the order gives alternation and greed).
        case split(Int, Int)
        case jump(Int)
        case match
    }

    let program: [Instruction]

    /// Nil when the pattern uses anything outside what this matcher handles (or is invalid).
    init?(_ pattern: String) {
        var parser = Parser(scalars: Array(pattern.unicodeScalars))
        guard let node = parser.parseAlternation(depth: 0), parser.index == parser.scalars.count else { return nil }
        var compiler = Compiler()
        guard compiler.emit(node), compiler.program.count < Self.maxInstructions else { return nil }
        compiler.program.append(.match)
        program = compiler.program
    }

    /// Whether the first match from the start, by `NSRegularExpression`'s priorities, is the
    /// whole of `value`; nil when a class escape meets a scalar beyond ASCII (see `ClassEscape`).
    func matchesWhole(_ value: String) -> Bool? {
        let count = program.count
        // One scratch allocation per call: the last position each instruction was reached at,
        // the threads at this position and the next, and the closure's stack (each instruction
        // is expanded once per position and pushes at most two more).
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 5 * count + 1) { scratch -> Bool? in
            let seen = UnsafeMutableBufferPointer(rebasing: scratch[0..<count])
            var current = UnsafeMutableBufferPointer(rebasing: scratch[count..<(2 * count)])
            var next = UnsafeMutableBufferPointer(rebasing: scratch[(2 * count)..<(3 * count)])
            let stack = UnsafeMutableBufferPointer(rebasing: scratch[(3 * count)...])
            seen.initialize(repeating: -1)
            var currentCount = 0
            var nextCount = 0
            var generation = 0

            // Follows jumps and splits from `start` in priority order, adding the instructions
            // that consume a scalar (or match) to `list`, each at most once per position.
            func add(_ start: Int, to list: UnsafeMutableBufferPointer<Int>, _ listCount: inout Int) {
                var depth = 1
                stack[0] = start
                while depth > 0 {
                    depth -= 1
                    let pc = stack[depth]
                    guard seen[pc] != generation else { continue }
                    seen[pc] = generation
                    switch program[pc] {
                    case .jump(let target):
                        stack[depth] = target
                        depth += 1
                    case .split(let first, let second):
                        stack[depth] = second
                        stack[depth + 1] = first
                        depth += 2
                    default:
                        list[listCount] = pc
                        listCount += 1
                    }
                }
            }

            var scalars = value.unicodeScalars.makeIterator()
            var scalar = scalars.next()
            var position = 0
            var matchedEnd = -1
            add(0, to: current, &currentCount)
            while currentCount > 0 {
                generation += 1
                nextCount = 0
                for index in 0..<currentCount {
                    let pc = current[index]
                    switch program[pc] {
                    case .match:
                        matchedEnd = position
                    case .scalar(let expected):
                        if scalar == expected { add(pc + 1, to: next, &nextCount) }
                    case .set(let set):
                        if let scalar {
                            guard let inside = set.contains(scalar) else { return nil }
                            if inside { add(pc + 1, to: next, &nextCount) }
                        }
                    case .any:
                        if let scalar, !Self.isLineTerminator(scalar) { add(pc + 1, to: next, &nextCount) }
                    case .jump, .split:
                        break
                    }
                    // A match cuts every path of lower priority.
                    if matchedEnd == position { break }
                }
                guard scalar != nil else { break }
                swap(&current, &next)
                currentCount = nextCount
                position += 1
                scalar = scalars.next()
            }
            return scalar == nil && matchedEnd == position
        }
    }

    /// ICU's line terminators, none of which `.` matches.
    static func isLineTerminator(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A...0x0D, 0x85, 0x2028, 0x2029: return true
        default: return false
        }
    }

    indirect enum Node {
        case scalar(Unicode.Scalar)
        case set(ScalarSet)
        case any
        case sequence([Node])
        case alternation([Node])
        case repetition(Node, min: Int, max: Int?)

        /// Whether the node can match the empty string.
        var matchesEmpty: Bool {
            switch self {
            case .scalar, .set, .any: false
            case .sequence(let items): items.allSatisfy(\.matchesEmpty)
            case .alternation(let branches): branches.contains(where: \.matchesEmpty)
            case .repetition(let body, let min, _): min == 0 || body.matchesEmpty
            }
        }
    }

    struct Parser {
        let scalars: [Unicode.Scalar]
        var index = 0

        var peek: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

        mutating func parseAlternation(depth: Int) -> Node? {
            guard depth <= 16 else { return nil }
            var branches: [Node] = []
            while true {
                guard let branch = parseSequence(depth: depth) else { return nil }
                branches.append(branch)
                guard peek == "|" else { break }
                index += 1
            }
            return branches.count == 1 ? branches[0] : .alternation(branches)
        }

        mutating func parseSequence(depth: Int) -> Node? {
            var items: [Node] = []
            while let scalar = peek, scalar != "|", scalar != ")" {
                guard var atom = parseAtom(depth: depth) else { return nil }
                if let (min, max) = parseQuantifier() {
                    // A backtracking engine leaves a loop whose pass matched nothing at once, which
                    // reorders the paths it tries; a machine without backtracking cannot follow.
                    if (max ?? 2) > 1 && atom.matchesEmpty { return nil }
                    atom = .repetition(atom, min: min, max: max)
                } else if index < scalars.count, "?*+{".unicodeScalars.contains(scalars[index]) {
                    return nil
                }
                items.append(atom)
            }
            return .sequence(items)
        }

        mutating func parseAtom(depth: Int) -> Node? {
            guard let scalar = peek else { return nil }
            index += 1
            switch scalar {
            case "(":
                if peek == "?" {
                    guard index + 1 < scalars.count, scalars[index + 1] == ":" else { return nil }
                    index += 2
                }
                guard let inner = parseAlternation(depth: depth + 1), peek == ")" else { return nil }
                index += 1
                return inner
            case "[":
                return parseClass().map { .set($0) }
            case "\\":
                guard let escaped = peek else { return nil }
                index += 1
                if let escape = Self.classEscape(escaped) {
                    return .set(ScalarSet(escapes: [escape]))
                }
                return Self.literalEscape(escaped).map { .scalar($0) }
            case ".":
                return .any
            case "^", "$", "*", "+", "?", "{", "}", "]", ")", "|":
                return nil
            default:
                return .scalar(scalar)
            }
        }

        static func classEscape(_ scalar: Unicode.Scalar) -> (ClassEscape, negated: Bool)? {
            switch scalar {
            case "d": (.digit, false)
            case "D": (.digit, true)
            case "w": (.word, false)
            case "W": (.word, true)
            case "s": (.space, false)
            case "S": (.space, true)
            default: nil
            }
        }

        /// `\n \t \r`, or an escaped ASCII punctuation character standing for itself.
        static func literalEscape(_ scalar: Unicode.Scalar) -> Unicode.Scalar? {
            switch scalar {
            case "n": return "\n"
            case "t": return "\t"
            case "r": return "\r"
            default:
                let value = scalar.value
                let punctuation = (0x21...0x2F).contains(value) || (0x3A...0x40).contains(value) || (0x5B...0x60).contains(value) || (0x7B...0x7E).contains(value)
                return punctuation ? scalar : nil
            }
        }

        /// A class after its `[`: single scalars, ranges and class escapes. A `-` is literal only
        /// first or last; nested classes, `&&` and a leading `]` are left to `NSRegularExpression`.
        mutating func parseClass() -> ScalarSet? {
            var set = ScalarSet()
            if peek == "^" {
                set.negated = true
                index += 1
            }
            var first = true
            while let scalar = peek {
                index += 1
                switch scalar {
                case "]":
                    return first ? nil : set
                case "[":
                    return nil
                case "&" where peek == "&":
                    return nil
                default:
                    break
                }
                var low: Unicode.Scalar
                if scalar == "\\" {
                    guard let escaped = peek else { return nil }
                    index += 1
                    if let escape = Self.classEscape(escaped) {
                        set.escapes.append(escape)
                        first = false
                        continue
                    }
                    guard let literal = Self.literalEscape(escaped) else { return nil }
                    low = literal
                } else if scalar == "-" {
                    guard first || peek == "]" else { return nil }
                    low = scalar
                } else {
                    low = scalar
                }
                first = false
                var high = low
                if peek == "-", index + 1 < scalars.count, scalars[index + 1] != "]" {
                    index += 1
                    guard let end = peek, end != "[", end != "-" else { return nil }
                    index += 1
                    if end == "\\" {
                        guard let escaped = peek, let literal = Self.literalEscape(escaped) else { return nil }
                        index += 1
                        high = literal
                    } else {
                        high = end
                    }
                    guard low.value <= high.value else { return nil }
                }
                set.ranges.append(low.value...high.value)
            }
            return nil
        }

        /// `? * + {n} {n,} {n,m}` (greedy only); nil when there is none. A lazy or possessive
        /// suffix, or a `{` that is not a quantifier, makes the caller give up.
        mutating func parseQuantifier() -> (Int, Int?)? {
            guard let scalar = peek else { return nil }
            let start = index
            var bounds: (Int, Int?)
            switch scalar {
            case "?": bounds = (0, 1)
            case "*": bounds = (0, nil)
            case "+": bounds = (1, nil)
            case "{":
                index += 1
                guard let low = number() else {
                    index = start
                    return nil
                }
                var high: Int? = low
                if peek == "," {
                    index += 1
                    high = peek == "}" ? nil : number()
                    if high == nil, peek != "}" {
                        index = start
                        return nil
                    }
                }
                guard peek == "}", high.map({ $0 >= low }) ?? true else {
                    index = start
                    return nil
                }
                bounds = (low, high)
            default:
                return nil
            }
            index += 1
            if let next = peek, next == "?" || next == "+" {
                index = start
                return nil
            }
            return bounds
        }

        mutating func number() -> Int? {
            var value = 0
            var digits = 0
            while let scalar = peek, ("0"..."9").contains(scalar) {
                guard digits < 4 else { return nil }
                value = value * 10 + Int(scalar.value - 0x30)
                digits += 1
                index += 1
            }
            return digits > 0 && value <= 1000 ? value : nil
        }
    }

    struct Compiler {
        var program: [Instruction] = []

        /// Emits `node`; false once the program grows past `maxInstructions`.
        mutating func emit(_ node: Node) -> Bool {
            guard program.count < PatternMatcher.maxInstructions else { return false }
            switch node {
            case .scalar(let scalar):
                program.append(.scalar(scalar))
            case .set(let set):
                program.append(.set(set))
            case .any:
                program.append(.any)
            case .sequence(let items):
                for item in items where !emit(item) { return false }
            case .alternation(let branches):
                var jumps: [Int] = []
                for (n, branch) in branches.enumerated() {
                    if n < branches.count - 1 {
                        let split = program.count
                        program.append(.split(split + 1, 0))
                        guard emit(branch) else { return false }
                        jumps.append(program.count)
                        program.append(.jump(0))
                        program[split] = .split(split + 1, program.count)
                    } else {
                        guard emit(branch) else { return false }
                    }
                }
                for jump in jumps { program[jump] = .jump(program.count) }
            case .repetition(let body, let min, let max):
                for _ in 0..<min where !emit(body) { return false }
                if let max {
                    var splits: [Int] = []
                    for _ in min..<max {
                        splits.append(program.count)
                        program.append(.split(program.count + 1, 0))
                        guard emit(body) else { return false }
                    }
                    for split in splits { program[split] = .split(split + 1, program.count) }
                } else {
                    let loop = program.count
                    program.append(.split(loop + 1, 0))
                    guard emit(body) else { return false }
                    program.append(.jump(loop))
                    program[loop] = .split(loop + 1, program.count)
                }
            }
            return program.count < PatternMatcher.maxInstructions
        }
    }
}
