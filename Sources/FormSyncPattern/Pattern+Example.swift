extension Pattern {
    /// A value the pattern accepts, of `minLength` to `maxLength` Unicode scalars (the shortest
    /// such), made of plain characters where the pattern allows them; nil when there is none in
    /// that range. Tools use it to make a valid payload from a spec (`formsync conformance`).
    /// Breadth-first over (instruction, length): bounded by the program's size times `maxLength`.
    public func example(minLength: Int = 0, maxLength: Int = 256) -> String? {
        let limit = Swift.max(0, Swift.min(maxLength, 4096))
        let floor = Swift.max(0, minLength)
        guard floor <= limit else { return nil }
        struct State: Hashable {
            var pc: Int
            var length: Int
        }
        // Where each state was reached from, and the scalar consumed on the way (nil: none).
        var parent: [State: (State, Unicode.Scalar?)] = [:]
        var queue: [State] = [State(pc: 0, length: 0)]
        var seen: Set<State> = [queue[0]]
        var head = 0
        func reach(_ next: State, from state: State, by scalar: Unicode.Scalar?) {
            guard next.length <= limit, next.pc < program.count, !seen.contains(next) else { return }
            seen.insert(next)
            parent[next] = (state, scalar)
            queue.append(next)
        }
        while head < queue.count {
            let state = queue[head]
            head += 1
            switch program[state.pc] {
            case .match:
                guard state.length >= floor else { continue }
                var scalars: [Unicode.Scalar] = []
                var at = state
                while let (previous, scalar) = parent[at] {
                    if let scalar { scalars.append(scalar) }
                    at = previous
                }
                var text = ""
                text.unicodeScalars.append(contentsOf: scalars.reversed())
                return matches(text) ? text : nil
            case .scalar(let scalar):
                reach(State(pc: state.pc + 1, length: state.length + 1), from: state, by: scalar)
            case .set(let set):
                if let scalar = Self.representative(of: set) {
                    reach(State(pc: state.pc + 1, length: state.length + 1), from: state, by: scalar)
                }
            case .any:
                reach(State(pc: state.pc + 1, length: state.length + 1), from: state, by: "a")
            case .split(let first, let second):
                reach(State(pc: first, length: state.length), from: state, by: nil)
                reach(State(pc: second, length: state.length), from: state, by: nil)
            case .jump(let target):
                reach(State(pc: target, length: state.length), from: state, by: nil)
            }
        }
        return nil
    }

    /// A plain scalar the set holds: a letter, a digit or common punctuation first, then the
    /// lower bound of one of its ranges.
    static func representative(of set: ScalarSet) -> Unicode.Scalar? {
        for candidate in "aA0x_-. 1b".unicodeScalars where set.contains(candidate) { return candidate }
        for range in set.ranges {
            for value in [range.lowerBound, range.upperBound] {
                if let scalar = Unicode.Scalar(value), set.contains(scalar) { return scalar }
            }
        }
        for value in UInt32(0x21)...UInt32(0x7E) {
            if let scalar = Unicode.Scalar(value), set.contains(scalar) { return scalar }
        }
        return nil
    }
}
