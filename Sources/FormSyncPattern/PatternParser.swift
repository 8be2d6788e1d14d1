extension Pattern {
    /// What a parsed piece holds, for the nested-repetition rule.
    struct Shape {
        var hasQuantifier = false
        var hasAlternation = false
    }

    /// Reads a pattern into a tree, collecting the reasons it is refused. Recursion follows the
    /// nesting of groups only, which is bounded by `maxDepth`.
    struct Parser {
        let scalars: [Unicode.Scalar]
        var index = 0
        var problems: [String] = []
        /// The pattern without its leading `^` and trailing `$`.
        var bodyRange: Range<Int>
        /// Where the pattern ends (before a trailing `$`).
        private var end: Int

        init(scalars: [Unicode.Scalar]) {
            self.scalars = scalars
            var start = 0
            var end = scalars.count
            if scalars.first == "^" { start = 1 }
            // A trailing `$` is an anchor unless it is escaped (an odd run of backslashes).
            if end > start, scalars[end - 1] == "$" {
                var backslashes = 0
                while end - 2 - backslashes >= start, scalars[end - 2 - backslashes] == "\\" { backslashes += 1 }
                if backslashes % 2 == 0 { end -= 1 }
            }
            bodyRange = start..<end
            self.end = end
            index = start
        }

        var atEnd: Bool { index >= end }
        var peek: Unicode.Scalar? { atEnd ? nil : scalars[index] }

        mutating func fail(_ message: String) {
            if problems.count < 5 { problems.append(message) }
            index = end
        }

        mutating func parseWhole() -> Node? {
            let (node, _) = parseAlternation(depth: 0)
            if index < end && problems.isEmpty { fail("unbalanced ')'") }
            return problems.isEmpty ? node : nil
        }

        mutating func parseAlternation(depth: Int) -> (Node, Shape) {
            var shape = Shape()
            guard depth <= Pattern.maxDepth else {
                fail("groups nest deeper than \(Pattern.maxDepth) levels")
                return (.sequence([]), shape)
            }
            var branches: [Node] = []
            while true {
                let (sequence, sequenceShape) = parseSequence(depth: depth)
                branches.append(sequence)
                shape.hasQuantifier = shape.hasQuantifier || sequenceShape.hasQuantifier
                shape.hasAlternation = shape.hasAlternation || sequenceShape.hasAlternation
                guard peek == "|" else { break }
                index += 1
                shape.hasAlternation = true
            }
            return (branches.count == 1 ? branches[0] : .alternation(branches), shape)
        }

        mutating func parseSequence(depth: Int) -> (Node, Shape) {
            var shape = Shape()
            var items: [Node] = []
            while let scalar = peek, scalar != "|", scalar != ")" {
                guard let (atom, atomShape) = parseAtom(depth: depth), problems.isEmpty else { return (.sequence(items), shape) }
                let quantifier = parseQuantifier()
                guard problems.isEmpty else { return (.sequence(items), shape) }
                if let quantifier {
                    let repeats = quantifier.max.map { $0 > 1 } ?? true
                    if repeats && (atomShape.hasQuantifier || atomShape.hasAlternation) {
                        fail(
                            "a repeated group holds a quantifier or an alternation (as in (a+)+ or (a|aa)*): a backtracking engine checking the JSON Schema could take exponential time; rewrite it without the nesting"
                        )
                        return (.sequence(items), shape)
                    }
                    if quantifier.max != quantifier.min { shape.hasQuantifier = true }
                    items.append(.repetition(atom, min: quantifier.min, max: quantifier.max))
                } else {
                    items.append(atom)
                }
                shape.hasQuantifier = shape.hasQuantifier || atomShape.hasQuantifier
                shape.hasAlternation = shape.hasAlternation || atomShape.hasAlternation
            }
            return (items.count == 1 ? items[0] : .sequence(items), shape)
        }

        mutating func parseAtom(depth: Int) -> (Node, Shape)? {
            guard let scalar = peek else { return nil }
            index += 1
            switch scalar {
            case "(":
                if peek == "?" {
                    guard index + 1 < end, scalars[index + 1] == ":" else {
                        fail("only plain groups ( ) and non-capturing groups (?: ) are allowed (no look-around, named groups or flags)")
                        return nil
                    }
                    index += 2
                }
                let inner = parseAlternation(depth: depth + 1)
                guard problems.isEmpty else { return nil }
                guard peek == ")" else {
                    fail("a '(' is not closed")
                    return nil
                }
                index += 1
                return inner
            case "[":
                return parseClass().map { (.set($0), Shape()) }
            case "\\":
                guard let escaped = parseEscape(inClass: false) else { return nil }
                switch escaped {
                case .scalar(let literal): return (.scalar(literal), Shape())
                case .escape(let escape): return (.set(ScalarSet(escapes: [escape])), Shape())
                }
            case ".":
                return (.any, Shape())
            case "^", "$":
                fail("anchors ^ and $ are allowed only at the very start and end (the pattern always matches the whole value)")
            case "*", "+", "?", "{":
                fail("a quantifier '\(scalar)' has nothing to repeat")
            case "]", "}":
                fail("a lone '\(scalar)' is refused by ECMA-262 (JSON Schema); escape it as \\\(scalar)")
            default:
                return (.scalar(scalar), Shape())
            }
            return nil
        }

        enum Escaped {
            case scalar(Unicode.Scalar)
            case escape(ScalarSet.Escape)
        }

        /// The escape after a `\`: a class escape, a control escape, or an escaped syntax
        /// character (and `-` in a class), as ECMA-262 allows them with the `u` flag.
        mutating func parseEscape(inClass: Bool) -> Escaped? {
            guard let scalar = peek else {
                fail("the pattern ends with a lone '\\'")
                return nil
            }
            index += 1
            switch scalar {
            case "d": return .escape(.init(kind: .digit, negated: false))
            case "D": return .escape(.init(kind: .digit, negated: true))
            case "w": return .escape(.init(kind: .word, negated: false))
            case "W": return .escape(.init(kind: .word, negated: true))
            case "s": return .escape(.init(kind: .space, negated: false))
            case "S": return .escape(.init(kind: .space, negated: true))
            case "n": return .scalar("\n")
            case "r": return .scalar("\r")
            case "t": return .scalar("\t")
            case "f": return .scalar("\u{0C}")
            case "v": return .scalar("\u{0B}")
            case "^", "$", "\\", ".", "*", "+", "?", "(", ")", "[", "]", "{", "}", "|", "/":
                return .scalar(scalar)
            case "-" where inClass:
                return .scalar(scalar)
            case "b", "B":
                fail("word boundaries \\b and \\B are not allowed")
            case "p", "P":
                fail("Unicode property escapes \\p{…} are not allowed")
            case "1"..."9", "k":
                fail("back-references are not allowed")
            default:
                fail(
                    "the escape '\\\(scalar)' is refused by ECMA-262 with the u flag (JSON Schema); \(scalar.properties.isAlphabetic || scalar.properties.numericType != nil ? "escape only punctuation" : "write '\(scalar)' without the backslash")"
                )
            }
            return nil
        }

        /// A class after its `[`: scalars, ranges and class escapes.
        mutating func parseClass() -> ScalarSet? {
            var set = ScalarSet()
            if peek == "^" {
                set.negated = true
                index += 1
            }
            var first = true
            while let scalar = peek {
                index += 1
                if scalar == "]" {
                    guard !first else {
                        fail("an empty class [] or [^] is not allowed")
                        return nil
                    }
                    return set
                }
                first = false
                var low: Unicode.Scalar
                switch scalar {
                case "[":
                    fail("a '[' inside a class must be escaped as \\[ (and POSIX classes like [:alpha:] are not allowed; use ranges)")
                    return nil
                case "\\":
                    switch parseEscape(inClass: true) {
                    case .escape(let escape)?:
                        if peek == "-", index + 1 < end, scalars[index + 1] != "]" {
                            fail("a class escape cannot bound a range")
                            return nil
                        }
                        set.escapes.append(escape)
                        continue
                    case .scalar(let literal)?:
                        low = literal
                    case nil:
                        return nil
                    }
                default:
                    low = scalar
                }
                var high = low
                if peek == "-", index + 1 < end, scalars[index + 1] != "]" {
                    index += 1
                    guard let upper = peek else { break }
                    index += 1
                    if upper == "\\" {
                        switch parseEscape(inClass: true) {
                        case .scalar(let literal)?: high = literal
                        case .escape?:
                            fail("a class escape cannot bound a range")
                            return nil
                        case nil:
                            return nil
                        }
                    } else if upper == "[" {
                        fail("a '[' inside a class must be escaped as \\[")
                        return nil
                    } else {
                        high = upper
                    }
                    guard low.value <= high.value else {
                        fail("the range \(low)-\(high) is out of order")
                        return nil
                    }
                }
                set.ranges.append(low.value...high.value)
            }
            fail("a '[' is not closed")
            return nil
        }

        /// `? * + {n} {n,} {n,m}` (greedy only); nil when there is none.
        mutating func parseQuantifier() -> (min: Int, max: Int?)? {
            guard let scalar = peek else { return nil }
            let bounds: (min: Int, max: Int?)
            switch scalar {
            case "?":
                index += 1
                bounds = (0, 1)
            case "*":
                index += 1
                bounds = (0, nil)
            case "+":
                index += 1
                bounds = (1, nil)
            case "{":
                index += 1
                guard let low = number() else {
                    if problems.isEmpty { fail("a '{' must start a quantifier {n}, {n,} or {n,m}; escape it as \\{ to match it") }
                    return nil
                }
                var high: Int? = low
                if peek == "," {
                    index += 1
                    if peek == "}" {
                        high = nil
                    } else {
                        guard let value = number() else {
                            if problems.isEmpty { fail("malformed quantifier") }
                            return nil
                        }
                        high = value
                    }
                }
                guard peek == "}" else {
                    fail("a quantifier '{' is not closed")
                    return nil
                }
                index += 1
                if let high, high < low {
                    fail("quantifier {\(low),\(high)} has its bounds reversed")
                    return nil
                }
                bounds = (low, high)
            default:
                return nil
            }
            if peek == "?" || peek == "+" {
                fail("lazy and possessive quantifiers are not allowed")
                return nil
            }
            if let next = peek, next == "*" || next == "{" {
                fail("a quantifier may not follow a quantifier")
                return nil
            }
            return bounds
        }

        mutating func number() -> Int? {
            var value = 0
            var digits = 0
            while let scalar = peek, ("0"..."9").contains(scalar) {
                guard digits < 5 else {
                    fail("quantifier bound is over \(Pattern.maxRepeat)")
                    return nil
                }
                value = value * 10 + Int(scalar.value - 0x30)
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            guard value <= Pattern.maxRepeat else {
                fail("quantifier bound \(value) is over \(Pattern.maxRepeat)")
                return nil
            }
            return value
        }
    }
}
