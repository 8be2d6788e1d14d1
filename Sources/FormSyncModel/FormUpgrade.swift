import Foundation

/// One generated step of a form's `upgrades:`: how a payload of version `from` becomes one of
/// the next version, on its JSON (top-level fields). Renames, then value maps, then drops,
/// then defaults (which fill only a field the payload does not hold). What a step cannot do
/// (a new required field with no default) is left for validation to report, so the item is
/// parked for a person instead of being sent half-made.
public struct FormUpgrade: Sendable, Equatable {
    public var from: Int
    public var renames: [String: String]
    public var maps: [String: [String: String]]
    public var drops: [String]
    /// Field → its default as JSON text.
    public var defaults: [String: String]

    public init(
        from: Int, renames: [String: String] = [:], maps: [String: [String: String]] = [:], drops: [String] = [],
        defaults: [String: String] = [:]
    ) {
        self.from = from
        self.renames = renames
        self.maps = maps
        self.drops = drops
        self.defaults = defaults
    }

    /// Why a payload could not be upgraded.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Applies this step to a payload's JSON.
    public func apply(_ json: Data) throws -> Data {
        guard var object = JSONObjectSlices(json) else { throw Failure(description: "the payload is not a JSON object") }
        for (old, new) in renames.sorted(by: { $0.key < $1.key }) {
            guard let value = object[old] else { continue }
            object.set(old, nil)
            object.set(new, value)
        }
        for (field, values) in maps.sorted(by: { $0.key < $1.key }) {
            guard let raw = object[field] else { continue }
            if let text = try? JSONDecoder().decode(String.self, from: raw) {
                if let mapped = values[text] { object.set(field, try JSONEncoder().encode(mapped)) }
            } else if let list = try? JSONDecoder().decode([String].self, from: raw) {
                object.set(field, try JSONEncoder().encode(list.map { values[$0] ?? $0 }))
            }
        }
        for field in drops { object.set(field, nil) }
        for (field, value) in defaults.sorted(by: { $0.key < $1.key }) where object[field] == nil {
            object.set(field, Data(value.utf8))
        }
        return object.data
    }

    /// Brings `json` from version `version` to `target` through every step on the way (a
    /// version with no step of its own changed nothing an old payload holds).
    public static func upgrade(_ json: Data, from version: Int, to target: Int, steps: [FormUpgrade]) throws -> Data {
        guard version <= target else { throw Failure(description: "version \(version) is newer than this build's \(target)") }
        var json = json
        for step in steps.sorted(by: { $0.from < $1.from }) where step.from >= version && step.from < target {
            json = try step.apply(json)
        }
        return json
    }
}

extension FormPayload {
    /// No `upgrades:` in the spec.
    public static var upgrades: [FormUpgrade] { [] }
}
