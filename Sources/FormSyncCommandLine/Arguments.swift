/// A command line split into positional arguments, options with values and flags, checked
/// against what a command accepts. A mistake is a `UsageError` (exit status 2).
package struct Arguments {
    package var positionals: [String] = []
    package var values: [String: String] = [:]
    package var flags: Set<String> = []

    package init(_ raw: [String], options: Set<String> = [], flags allowedFlags: Set<String> = []) throws {
        var rest = raw[...]
        while let argument = rest.popFirst() {
            if argument == "--" {
                positionals += rest
                break
            }
            if argument.hasPrefix("-") && argument != "-" {
                let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
                let name = parts[0]
                if options.contains(name) {
                    if parts.count == 2 {
                        values[name] = parts[1]
                    } else if let value = rest.popFirst() {
                        values[name] = value
                    } else {
                        throw UsageError("\(name) needs a value")
                    }
                } else if allowedFlags.contains(name) && parts.count == 1 {
                    flags.insert(name)
                } else {
                    throw UsageError("unknown option '\(argument)'")
                }
            } else {
                positionals.append(argument)
            }
        }
    }

    /// A whole-number option within `range` (a usage error, exit 2, otherwise).
    package func integer(_ name: String, default fallback: Int, in range: ClosedRange<Int> = 0...1_000_000_000) throws -> Int {
        guard let text = values[name] else { return fallback }
        guard let value = Int(text) else { throw UsageError("\(name) takes a whole number, not '\(text)'") }
        guard range.contains(value) else {
            throw UsageError("\(name) must be between \(range.lowerBound) and \(range.upperBound), not \(value)")
        }
        return value
    }
}
