/// The regular expressions a spec's `pattern` may use: a subset that means the same in Swift
/// (`NSRegularExpression`, whole-value match) and in JSON Schema (ECMA-262, anchored by the
/// generator as `^(?:…)$`), and that cannot backtrack catastrophically.
///
/// Allowed: literal characters; escapes `\d \D \w \W \s \S` and an escaped punctuation
/// character; classes `[...]` and `[^...]` with ranges; `.`; groups `(...)` and `(?:...)`;
/// alternation `|`; quantifiers `? * + {n} {n,} {n,m}` with bounds up to 1000.
/// Refused: back-references, look-around, named groups, inline flags, `\b`, `\p{…}`, anchors
/// (the whole value is matched anyway), lazy or possessive quantifiers, and — because they make
/// matching time explode — a group repeated by `* + {n,} {n,m}` that itself holds a quantifier
/// (other than an exact `{n}`) or an alternation: `(a+)+`, `(a|aa)*`, `(x?)*`.
enum PortablePattern {
    static let maxRepeat = 1000

    /// Every reason `pattern` falls outside the subset (empty when it is fine).
    static func problems(_ pattern: String) -> [String] {
        var parser = Parser(scalars: Array(pattern.unicodeScalars))
        parser.parseAlternation(depth: 0)
        if parser.index < parser.scalars.count && parser.problems.isEmpty {
            parser.problems.append("unbalanced ')'")
        }
        return parser.problems
    }

    /// What a parsed piece holds, for the nested-repetition rule.
    struct Shape {
        var hasQuantifier = false
        var hasAlternation = false
    }

    struct Parser {
        let scalars: [Unicode.Scalar]
        var index = 0
        var problems: [String] = []

        var atEnd: Bool { index >= scalars.count }
        var peek: Unicode.Scalar? { atEnd ? nil : scalars[index] }

        mutating func fail(_ message: String) {
            if problems.count < 5 { problems.append(message) }
            index = scalars.count
        }

        @discardableResult
        mutating func parseAlternation(depth: Int) -> Shape {
            var shape = Shape()
            guard depth <= 16 else {
                fail("groups nest deeper than 16 levels")
                return shape
            }
            while true {
                let sequence = parseSequence(depth: depth)
                shape.hasQuantifier = shape.hasQuantifier || sequence.hasQuantifier
                shape.hasAlternation = shape.hasAlternation || sequence.hasAlternation
                if peek == "|" {
                    index += 1
                    shape.hasAlternation = true
                    continue
                }
                return shape
            }
        }

        mutating func parseSequence(depth: Int) -> Shape {
            var shape = Shape()
            while let scalar = peek, scalar != "|", scalar != ")" {
                let atom = parseAtom(depth: depth)
                guard problems.isEmpty else { return shape }
                let quantifier = parseQuantifier()
                guard problems.isEmpty else { return shape }
                if let quantifier {
                    if quantifier.repeats && (atom.hasQuantifier || atom.hasAlternation) {
                        fail("a repeated group holds a quantifier or an alternation (as in (a+)+ or (a|aa)*): matching time could explode; rewrite it without the nesting")
                        return shape
                    }
                    if !quantifier.exact { shape.hasQuantifier = true }
                }
                shape.hasQuantifier = shape.hasQuantifier || atom.hasQuantifier
                shape.hasAlternation = shape.hasAlternation || atom.hasAlternation
            }
            return shape
        }

        mutating func parseAtom(depth: Int) -> Shape {
            guard let scalar = peek else { return Shape() }
            index += 1
            switch scalar {
            case "(":
                if peek == "?" {
                    guard index + 1 < scalars.count, scalars[index + 1] == ":" else {
                        fail("only plain groups ( ) and non-capturing groups (?: ) are allowed (no look-around, named groups or flags)")
                        return Shape()
                    }
                    index += 2
                }
                let inner = parseAlternation(depth: depth + 1)
                guard peek == ")" else {
                    if problems.isEmpty { fail("a '(' is not closed") }
                    return inner
                }
                index += 1
                return inner
            case "[":
                parseClass()
            case "\\":
                parseEscape(inClass: false)
            case "^", "$":
                fail("anchors ^ and $ are not needed: the pattern always matches the whole value")
            case "*", "+", "?", "{":
                fail("a quantifier '\(scalar)' has nothing to repeat")
            default:
                break
            }
            return Shape()
        }

        mutating func parseClass() {
            if peek == "^" { index += 1 }
            var first = true
            while let scalar = peek {
                index += 1
                if scalar == "]" && !first { return }
                first = false
                if scalar == "\\" {
                    parseEscape(inClass: true)
                } else if scalar == "[" && peek == ":" {
                    fail("POSIX classes like [:alpha:] are not portable; use ranges")
                    return
                }
                guard problems.isEmpty else { return }
            }
            fail("a '[' is not closed")
        }

        mutating func parseEscape(inClass: Bool) {
            guard let scalar = peek else {
                fail("the pattern ends with a lone '\\'")
                return
            }
            index += 1
            switch scalar {
            case "d", "D", "w", "W", "s", "S", "n", "t", "r":
                return
            case "b" where !inClass, "B":
                fail("word boundaries \\b and \\B differ between Swift and JSON Schema")
            case "p", "P":
                fail("Unicode property escapes \\p{…} differ between Swift and JSON Schema")
            case "1"..."9", "k":
                fail("back-references are not allowed")
            default:
                if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
                    fail("the escape '\\\(scalar)' is not portable; escape only punctuation")
                }
            }
        }

        /// A quantifier after an atom: whether it repeats (more than once) and is exact ({n}).
        mutating func parseQuantifier() -> (repeats: Bool, exact: Bool)? {
            guard let scalar = peek else { return nil }
            let result: (repeats: Bool, exact: Bool)
            switch scalar {
            case "?":
                index += 1
                result = (false, false)
            case "*", "+":
                index += 1
                result = (true, false)
            case "{":
                index += 1
                guard let low = number() else {
                    fail("a '{' must start a quantifier {n}, {n,} or {n,m}; escape it as \\{ to match it")
                    return nil
                }
                var high: Int? = low
                if peek == "," {
                    index += 1
                    high = peek == "}" ? nil : number()
                    if high == nil && peek != "}" {
                        fail("malformed quantifier")
                        return nil
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
                result = (high.map { $0 > 1 } ?? true, high == low)
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
            return result
        }

        mutating func number() -> Int? {
            var digits = ""
            while let scalar = peek, ("0"..."9").contains(scalar), digits.count < 5 {
                digits.unicodeScalars.append(scalar)
                index += 1
            }
            guard let value = Int(digits) else { return nil }
            guard value <= PortablePattern.maxRepeat else {
                fail("quantifier bound \(value) is over \(PortablePattern.maxRepeat)")
                return nil
            }
            return value
        }
    }
}
