/// Reads an expression's text into a `SpecExpression`, or the reason it cannot, at its offset.
/// Bounded: the text, the nesting and the number of nodes have limits, so a hostile spec cannot
/// make the checker recurse deeply or work long.
struct ExpressionParser {
    /// A problem at `offset` characters into the text.
    struct Failure: Error, Equatable {
        var offset: Int
        var message: String
    }

    static let maxLength = 2_000
    static let maxDepth = 32
    static let maxNodes = 400

    private enum Token: Equatable {
        case integer(Int64)
        case decimal(String)
        case text(String)
        case name(String)
        case field(SpecExpression.FieldPath)
        case symbol(String)
        case end
    }

    private let characters: [Character]
    private var tokens: [(token: Token, offset: Int)] = []
    private var index = 0
    private var nodes = 0

    private init(_ text: String) {
        characters = Array(text)
    }

    /// Parses `text` whole.
    static func parse(_ text: String) -> Result<SpecExpression, Failure> {
        guard text.count <= maxLength else {
            return .failure(Failure(offset: 0, message: "the expression is longer than \(maxLength) characters"))
        }
        var parser = ExpressionParser(text)
        do {
            try parser.tokenize()
            guard parser.tokens.count > 1 else { throw Failure(offset: 0, message: "the expression is empty") }
            let expression = try parser.parseOr(depth: 0)
            guard case .end = parser.peek else {
                throw Failure(offset: parser.offset, message: "unexpected \(parser.describe(parser.peek)) after a complete expression")
            }
            return .success(expression)
        } catch let failure as Failure {
            return .failure(failure)
        } catch {
            return .failure(Failure(offset: 0, message: "\(error)"))
        }
    }

    // MARK: - Tokens

    private mutating func tokenize() throws {
        var i = 0
        func isNameStart(_ c: Character) -> Bool { c == "_" || (c.isASCII && c.isLetter) }
        func isNamePart(_ c: Character) -> Bool { isNameStart(c) || (c.isASCII && c.isNumber) }
        func readName(_ start: Int) -> (String, Int) {
            var j = start
            while j < characters.count, isNamePart(characters[j]) { j += 1 }
            return (String(characters[start..<j]), j)
        }
        while i < characters.count {
            let c = characters[i]
            if c == " " || c == "\t" || c == "\n" {
                i += 1
                continue
            }
            let start = i
            if c.isASCII && c.isNumber {
                var j = i
                while j < characters.count, characters[j].isASCII, characters[j].isNumber { j += 1 }
                if j + 1 < characters.count, characters[j] == ".", characters[j + 1].isASCII, characters[j + 1].isNumber {
                    j += 1
                    while j < characters.count, characters[j].isASCII, characters[j].isNumber { j += 1 }
                    let digits = String(characters[i..<j])
                    guard digits.count <= 30 else {
                        throw Failure(offset: start, message: "the number \(digits.prefix(20))… has too many digits")
                    }
                    tokens.append((.decimal(digits), start))
                } else {
                    let digits = String(characters[i..<j])
                    guard let value = Int64(digits) else {
                        throw Failure(offset: start, message: "the number \(digits.prefix(20)) is too large (at most \(Int64.max))")
                    }
                    tokens.append((.integer(value), start))
                }
                if j < characters.count, isNameStart(characters[j]) {
                    throw Failure(offset: j, message: "a number runs into a name; put a space or an operator between them")
                }
                i = j
                continue
            }
            if c == "'" || c == "\"" {
                var j = i + 1
                while j < characters.count, characters[j] != c { j += 1 }
                guard j < characters.count else { throw Failure(offset: start, message: "the text starting here has no closing \(c)") }
                tokens.append((.text(String(characters[(i + 1)..<j])), start))
                i = j + 1
                continue
            }
            if c == "." {
                // `../name`, `.name`.
                var up = 0
                var j = i
                while j + 2 < characters.count, characters[j] == ".", characters[j + 1] == ".", characters[j + 2] == "/" {
                    up += 1
                    j += 3
                }
                if up == 0 {
                    guard j + 1 < characters.count, isNameStart(characters[j + 1]) else {
                        throw Failure(offset: start, message: "'.' must start a field: .name, or ../name for the level above")
                    }
                    j += 1
                }
                guard j < characters.count, isNameStart(characters[j]) else {
                    throw Failure(offset: j, message: "expected a field name after '../'")
                }
                var names: [String] = []
                var (name, next) = readName(j)
                names.append(name)
                while next + 1 < characters.count, characters[next] == ".", isNameStart(characters[next + 1]) {
                    (name, next) = readName(next + 1)
                    names.append(name)
                }
                tokens.append((.field(SpecExpression.FieldPath(up: up, names: names)), start))
                i = next
                continue
            }
            if isNameStart(c) {
                var (name, next) = readName(i)
                var names = [name]
                while next + 1 < characters.count, characters[next] == ".", isNameStart(characters[next + 1]) {
                    (name, next) = readName(next + 1)
                    names.append(name)
                }
                if names.count > 1 {
                    tokens.append((.field(SpecExpression.FieldPath(up: 0, names: names)), start))
                } else {
                    tokens.append((.name(names[0]), start))
                }
                i = next
                continue
            }
            let two = i + 1 < characters.count ? String(characters[i...(i + 1)]) : ""
            if ["!=", "<=", ">=", "=="].contains(two) {
                tokens.append((.symbol(two == "==" ? "=" : two), start))
                i += 2
                continue
            }
            if "=<>+-*(),".contains(c) {
                tokens.append((.symbol(String(c)), start))
                i += 1
                continue
            }
            throw Failure(offset: start, message: "'\(c)' has no meaning in an expression")
        }
        tokens.append((.end, characters.count))
    }

    private var peek: Token { tokens[index].token }
    private var offset: Int { tokens[index].offset }

    private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    private func describe(_ token: Token) -> String {
        switch token {
        case .integer(let n): return "the number \(n)"
        case .decimal(let d): return "the number \(d)"
        case .text(let t): return "the text '\(t.prefix(20))'"
        case .name(let n): return "'\(n)'"
        case .field(let path): return "the field \(path)"
        case .symbol(let s): return "'\(s)'"
        case .end: return "the end of the expression"
        }
    }

    private mutating func node(_ kind: SpecExpression.Kind, at offset: Int) throws -> SpecExpression {
        nodes += 1
        guard nodes <= Self.maxNodes else {
            throw Failure(offset: offset, message: "the expression has more than \(Self.maxNodes) parts; split it over calculated fields")
        }
        return SpecExpression(kind, at: offset)
    }

    private func nested(_ depth: Int) throws {
        guard depth <= Self.maxDepth else {
            throw Failure(offset: offset, message: "the expression nests deeper than \(Self.maxDepth) levels")
        }
    }

    private func isKeyword(_ word: String) -> Bool {
        if case .name(let name) = peek { return name == word }
        return false
    }

    // MARK: - Grammar (lowest precedence first)

    private mutating func parseOr(depth: Int) throws -> SpecExpression {
        try nested(depth)
        var left = try parseAnd(depth: depth)
        while isKeyword("or") {
            let at = offset
            advance()
            let right = try parseAnd(depth: depth)
            left = try node(.binary(.or, left, right), at: at)
        }
        return left
    }

    private mutating func parseAnd(depth: Int) throws -> SpecExpression {
        try nested(depth)
        var left = try parseNot(depth: depth)
        while isKeyword("and") {
            let at = offset
            advance()
            let right = try parseNot(depth: depth)
            left = try node(.binary(.and, left, right), at: at)
        }
        return left
    }

    private mutating func parseNot(depth: Int) throws -> SpecExpression {
        try nested(depth)
        if isKeyword("not") {
            let at = offset
            advance()
            return try node(.not(try parseNot(depth: depth + 1)), at: at)
        }
        return try parseComparison(depth: depth)
    }

    private mutating func parseComparison(depth: Int) throws -> SpecExpression {
        try nested(depth)
        let left = try parseAdditive(depth: depth)
        let operators: [String: SpecExpression.BinaryOperator] = [
            "=": .equal, "!=": .notEqual, "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
        ]
        guard case .symbol(let symbol) = peek, let op = operators[symbol] else { return left }
        let at = offset
        advance()
        let right = try parseAdditive(depth: depth)
        if case .symbol(let next) = peek, operators[next] != nil {
            throw Failure(offset: offset, message: "comparisons do not chain: write a < b and b < c")
        }
        return try node(.binary(op, left, right), at: at)
    }

    private mutating func parseAdditive(depth: Int) throws -> SpecExpression {
        try nested(depth)
        var left = try parseMultiplicative(depth: depth)
        while case .symbol(let symbol) = peek, symbol == "+" || symbol == "-" {
            let at = offset
            advance()
            let right = try parseMultiplicative(depth: depth)
            left = try node(.binary(symbol == "+" ? .plus : .minus, left, right), at: at)
        }
        return left
    }

    private mutating func parseMultiplicative(depth: Int) throws -> SpecExpression {
        try nested(depth)
        var left = try parseUnary(depth: depth)
        while true {
            let op: SpecExpression.BinaryOperator
            if case .symbol("*") = peek {
                op = .times
            } else if isKeyword("div") {
                op = .divide
            } else {
                return left
            }
            let at = offset
            advance()
            let right = try parseUnary(depth: depth)
            left = try node(.binary(op, left, right), at: at)
        }
    }

    private mutating func parseUnary(depth: Int) throws -> SpecExpression {
        try nested(depth)
        if case .symbol("-") = peek {
            let at = offset
            advance()
            return try node(.negate(try parseUnary(depth: depth + 1)), at: at)
        }
        return try parsePrimary(depth: depth)
    }

    private mutating func parsePrimary(depth: Int) throws -> SpecExpression {
        try nested(depth)
        let at = offset
        switch peek {
        case .integer(let value):
            advance()
            return try node(.integer(value), at: at)
        case .decimal(let digits):
            advance()
            return try node(.decimal(digits), at: at)
        case .text(let text):
            advance()
            return try node(.text(text), at: at)
        case .field(let path):
            advance()
            return try node(.field(path), at: at)
        case .symbol("("):
            advance()
            let inner = try parseOr(depth: depth + 1)
            guard case .symbol(")") = peek else {
                throw Failure(offset: at, message: "this '(' is never closed: expected ')' before \(describe(peek))")
            }
            advance()
            return inner
        case .name(let name):
            advance()
            if name == "true" || name == "false" { return try node(.boolean(name == "true"), at: at) }
            if ["and", "or", "not", "div"].contains(name) {
                throw Failure(offset: at, message: "'\(name)' needs an operand before it")
            }
            guard case .symbol("(") = peek else {
                return try node(.field(SpecExpression.FieldPath(up: 0, names: [name])), at: at)
            }
            guard let function = SpecExpression.Function(rawValue: name) else {
                let known = SpecExpression.Function.allCases.map(\.rawValue)
                throw Failure(offset: at, message: "unknown function '\(name)' (expected one of: \(known.joined(separator: ", ")))")
            }
            advance()
            var arguments: [SpecExpression] = []
            if case .symbol(")") = peek {
                advance()
            } else {
                while true {
                    arguments.append(try parseOr(depth: depth + 1))
                    if case .symbol(",") = peek {
                        advance()
                        continue
                    }
                    guard case .symbol(")") = peek else {
                        throw Failure(offset: offset, message: "expected ',' or ')' in the arguments of \(name)(")
                    }
                    advance()
                    break
                }
            }
            return try node(.call(function, arguments), at: at)
        default:
            throw Failure(offset: at, message: "expected a value, a field or '(' here, found \(describe(peek))")
        }
    }
}
