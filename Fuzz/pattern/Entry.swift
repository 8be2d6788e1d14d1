// libFuzzer target: the pattern engine (Sources/FormSyncPattern), fed arbitrary text. The input's
// first line is a pattern, the rest a value. A pattern it compiles must stay within its bounds,
// and every answer must equal a second, independent reading of the same tree (the set of
// positions each piece can end at). Built by Fuzz/run.sh, in one module with the engine.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPattern(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let (source, value) = text.firstIndex(of: "\n").map { (String(text[..<$0]), String(text[text.index(after: $0)...])) } ?? (text, "")
    let reasons = Pattern.problems(source)
    guard let pattern = try? Pattern(source) else {
        precondition(!reasons.isEmpty && reasons.count <= 5, "a refusal without a reason")
        return 0
    }
    precondition(reasons.isEmpty && pattern.instructionCount <= Pattern.maxInstructions, "an accepted pattern out of bounds")
    let answer = pattern.matches(value)
    precondition((try? Pattern(pattern.body))?.matches(value) == answer, "the body without its anchors answers otherwise")
    // The reference reading, for values short enough to follow position by position.
    let scalars = Array(value.unicodeScalars)
    guard scalars.count <= 24, pattern.instructionCount <= 2_000 else { return 0 }
    var parser = Pattern.Parser(scalars: Array(source.unicodeScalars))
    guard let tree = parser.parseWhole() else { preconditionFailure("compiled, but its tree does not parse") }
    precondition(ends(tree, [0], scalars).contains(scalars.count) == answer, "the machine and the reference disagree on \(source.debugDescription) / \(value.debugDescription)")
    return 0
}

/// Where `node` can end when it starts at any of `starts`.
func ends(_ node: Pattern.Node, _ starts: Set<Int>, _ value: [Unicode.Scalar]) -> Set<Int> {
    func step(_ accepts: (Unicode.Scalar) -> Bool) -> Set<Int> {
        Set(starts.compactMap { $0 < value.count && accepts(value[$0]) ? $0 + 1 : nil })
    }
    switch node {
    case .scalar(let expected): return step { $0 == expected }
    case .set(let set): return step { set.contains($0) }
    case .any: return step { !Pattern.isLineTerminator($0) }
    case .sequence(let items): return items.reduce(starts) { ends($1, $0, value) }
    case .alternation(let branches): return branches.reduce(into: Set<Int>()) { $0.formUnion(ends($1, starts, value)) }
    case .repetition(let body, let min, let max):
        var frontier = starts
        for _ in 0..<min { frontier = ends(body, frontier, value) }
        var result = frontier
        var count = min
        while max.map({ count < $0 }) ?? true {
            let next = ends(body, frontier, value)
            count += 1
            if max == nil && next.isSubset(of: result) { break }
            result.formUnion(next)
            frontier = next
            if frontier.isEmpty { break }
        }
        return result
    }
}
