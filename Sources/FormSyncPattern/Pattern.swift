/// A spec's `pattern`: the one regular-expression engine of FormSync. The spec checker accepts a
/// pattern only when this type compiles it; the generated `validate()`, the spec interpreter and
/// the reference server all match with it; and the language is a subset of ECMA-262 (with the
/// `u` flag, as JSON Schema validators use it) that means the same there, so the generated JSON
/// Schema carries the same rule.
///
/// **The language.** Literal characters; `.` (anything but `\n \r U+2028 U+2029`); escapes
/// `\d \D \w \W \s \S` (ECMA-262's: `\d` is 0–9, `\w` is ASCII letters, digits and `_`, `\s` is
/// ECMA-262's white space and line terminators), `\n \r \t \f \v`, and an escaped syntax
/// character `^ $ \ . * + ? ( ) [ ] { } | /` (and `-` in a class); classes `[...]`, `[^...]`
/// with ranges; groups `(...)`, `(?:...)`; alternation `|`; greedy quantifiers
/// `? * + {n} {n,} {n,m}` with bounds up to 1000. A `^` at the very start and a `$` at the very
/// end are accepted and mean nothing more: the whole value is always matched.
///
/// **Refused**, each with its reason: back-references, look-around, named groups, flags, `\b`,
/// `\p{…}`, anchors elsewhere, lazy or possessive quantifiers, escapes ECMA-262 refuses with the
/// `u` flag (`\@`, `\-` outside a class), an unescaped `]`, `}` or a `[` inside a class, an
/// empty class, a program past `maxInstructions`, and a group repeated by `* + {n,} {n,m}` that
/// itself holds a quantifier or an alternation (`(a+)+`, `(a|aa)*`): this engine is linear
/// whatever the pattern, but a backend that checks the JSON Schema with a backtracking engine
/// would not be.
///
/// **Matching** runs a Pike machine over the value's Unicode scalars: time linear in the value
/// (at most `instructionCount` steps per scalar), memory bounded by the program, no recursion,
/// no backtracking. The answer is whether some way through the pattern covers the whole value
/// (`a|ab` accepts `ab`), exactly as `^(?:…)$` does in ECMA-262.
public struct Pattern: Sendable, Equatable {
    /// The largest program a pattern may compile to (repetition bounds multiply a group's).
    public static let maxInstructions = 20_000
    /// The largest bound of a quantifier.
    public static let maxRepeat = 1000
    /// The deepest nesting of groups.
    public static let maxDepth = 16
    /// The most work one value may take to check, in steps of the machine (a thread moved on by
    /// one scalar). Linear in the value is not enough when a pattern holds thousands of states:
    /// `[0-9]{0,999}` nine times over 9,000 digits is 81 million steps, and a payload of a
    /// hundred such values held a server's worker for a minute. A value that would take more is
    /// refused (`Verdict.tooCostly`), the same on the device and the server; the spec checker
    /// refuses a large pattern whose field's `max_length` would let a value come near it.
    public static let workBudget = 1_000_000
    /// A pattern of more instructions than this needs its field's `max_length`, and the two
    /// together must stay within `workBudget`.
    public static let unboundedInstructions = 512

    /// What checking a value found.
    public enum Verdict: Sendable, Equatable {
        case match, noMatch
        /// The value would take more than the budget to check: refused without an answer.
        case tooCostly
    }

    /// The pattern as written in the spec.
    public let source: String
    /// The pattern without a leading `^` or trailing `$`: what the JSON Schema wraps.
    public let body: String
    let program: [Instruction]

    /// How many instructions the pattern compiled to (the most work matching does per scalar).
    public var instructionCount: Int { program.count }

    /// Why a pattern is refused: every reason, for the spec's diagnostics.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var reasons: [String]
        public var description: String { reasons.joined(separator: "; ") }
    }

    /// Compiles `source`, or throws every reason it is outside the language.
    public init(_ source: String) throws(Refusal) {
        self.source = source
        var parser = Parser(scalars: Array(source.unicodeScalars))
        let node = parser.parseWhole()
        guard parser.problems.isEmpty, let node else { throw Refusal(reasons: parser.problems) }
        var compiler = Compiler()
        guard compiler.emit(node), compiler.program.count < Self.maxInstructions else {
            throw Refusal(reasons: [
                "the pattern is too large once its repetitions are expanded (over \(Self.maxInstructions) steps); use smaller bounds"
            ])
        }
        compiler.program.append(.match)
        program = compiler.program
        body = String(String.UnicodeScalarView(parser.scalars[parser.bodyRange]))
    }

    /// Every reason `source` is refused (empty when it compiles).
    public static func problems(_ source: String) -> [String] {
        do {
            _ = try Pattern(source)
            return []
        } catch {
            return error.reasons
        }
    }

    public static func == (a: Pattern, b: Pattern) -> Bool { a.source == b.source }

    /// Whether the whole of `value` matches.
    public func matches(_ value: String) -> Bool {
        verdict(value, budget: .max) == .match
    }

    /// Whether the whole of `value` matches, in at most `budget` steps of the machine.
    public func verdict(_ value: String, budget: Int = Pattern.workBudget) -> Verdict {
        check(value, budget: budget).verdict
    }

    /// `verdict`, with the steps it took (at most `budget`, a little past it when refused).
    public func check(_ value: String, budget: Int = Pattern.workBudget) -> (verdict: Verdict, steps: Int) {
        let count = program.count
        // The generation each instruction was last added in, the threads at this scalar and the
        // next, and the stack of the closure (each instruction is expanded once per scalar).
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 4 * count + 2) { scratch -> (verdict: Verdict, steps: Int) in
            let seen = UnsafeMutableBufferPointer(rebasing: scratch[0..<count])
            var current = UnsafeMutableBufferPointer(rebasing: scratch[count..<(2 * count)])
            var next = UnsafeMutableBufferPointer(rebasing: scratch[(2 * count)..<(3 * count)])
            let stack = UnsafeMutableBufferPointer(rebasing: scratch[(3 * count)...])
            seen.initialize(repeating: -1)
            var generation = 0

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

            var currentCount = 0
            var steps = 0
            add(0, to: current, &currentCount)
            for scalar in value.unicodeScalars {
                steps += currentCount
                if steps > budget { return (.tooCostly, steps) }
                generation += 1
                var nextCount = 0
                for index in 0..<currentCount {
                    let pc = current[index]
                    let advances: Bool
                    switch program[pc] {
                    case .scalar(let expected): advances = scalar == expected
                    case .set(let set): advances = set.contains(scalar)
                    case .any: advances = !Self.isLineTerminator(scalar)
                    case .match, .jump, .split: advances = false
                    }
                    if advances { add(pc + 1, to: next, &nextCount) }
                }
                guard nextCount > 0 else { return (.noMatch, steps) }
                swap(&current, &next)
                currentCount = nextCount
            }
            for index in 0..<currentCount where program[current[index]] == .match { return (.match, steps) }
            return (.noMatch, steps)
        }
    }

    /// ECMA-262's line terminators, which `.` does not match.
    static func isLineTerminator(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A, 0x0D, 0x2028, 0x2029: return true
        default: return false
        }
    }

    // MARK: The program

    /// A class escape, as ECMA-262 defines it.
    enum ClassEscape: Sendable, Equatable {
        case digit, word, space

        func contains(_ scalar: Unicode.Scalar) -> Bool {
            let value = scalar.value
            switch self {
            case .digit:
                return (0x30...0x39).contains(value)
            case .word:
                return (0x30...0x39).contains(value) || (0x41...0x5A).contains(value) || (0x61...0x7A).contains(value) || value == 0x5F
            case .space:
                // WhiteSpace (TAB VT FF SP NBSP ZWNBSP and the Zs category) and LineTerminator.
                switch value {
                case 0x09...0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF: return true
                default: return false
                }
            }
        }
    }

    /// A class: ranges and class escapes (each possibly negated), the whole possibly negated.
    struct ScalarSet: Sendable, Equatable {
        var ranges: [ClosedRange<UInt32>] = []
        var escapes: [Escape] = []
        var negated = false

        struct Escape: Sendable, Equatable {
            var kind: ClassEscape
            var negated: Bool
        }

        func contains(_ scalar: Unicode.Scalar) -> Bool {
            var found = false
            for range in ranges where range.contains(scalar.value) {
                found = true
                break
            }
            if !found {
                for escape in escapes where escape.kind.contains(scalar) != escape.negated {
                    found = true
                    break
                }
            }
            return found != negated
        }
    }

    enum Instruction: Sendable, Equatable {
        case scalar(Unicode.Scalar)
        case set(ScalarSet)
        /// `.`
        case any
        /// Go on at both targets.
        case split(Int, Int)
        case jump(Int)
        case match
    }

    indirect enum Node {
        case scalar(Unicode.Scalar)
        case set(ScalarSet)
        case any
        case sequence([Node])
        case alternation([Node])
        case repetition(Node, min: Int, max: Int?)
    }

    struct Compiler {
        var program: [Instruction] = []

        /// Emits `node` without recursion deeper than the pattern's groups (at most
        /// `maxDepth`); false once the program grows past `maxInstructions`.
        mutating func emit(_ node: Node) -> Bool {
            guard program.count < Pattern.maxInstructions else { return false }
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
            return program.count < Pattern.maxInstructions
        }
    }
}
