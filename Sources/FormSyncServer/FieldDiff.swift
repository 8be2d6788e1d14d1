import FormSyncProtocol
import Foundation

/// The fields one version changed against the one before, leaf by leaf (objects by member,
/// arrays by index), as JSON Pointers (URI fragments, as field errors name fields: `#/name`) with the old and the new value. Computed when a history is
/// read, from the versions' stored payloads, so that no write pays for it. Iterative: a payload
/// nested however deep cannot exhaust the stack.
enum FieldDiff {
    /// The most changes one version lists; a version that changed more lists its first ones.
    static let maxChanges = 500

    static func changes(old: Data?, new: Data?) -> [FieldChange] {
        changes(old: old.flatMap(value), new: new.flatMap(value))
    }

    static func value(_ json: Data) -> WireValue? {
        try? JSONDecoder().decode(WireValue.self, from: json)
    }

    static func changes(old: WireValue?, new: WireValue?) -> [FieldChange] {
        var found: [FieldChange] = []
        var stack: [(pointer: String, old: WireValue?, new: WireValue?)] = [("#", old, new)]
        while let (pointer, old, new) = stack.popLast(), found.count < maxChanges {
            switch (old, new) {
            case (.object(let a)?, .object(let b)?):
                for key in Set(a.keys).union(b.keys).sorted().reversed() {
                    stack.append((pointer + "/" + escape(key), a[key], b[key]))
                }
            case (.array(let a)?, .array(let b)?):
                for index in (0..<max(a.count, b.count)).reversed() {
                    stack.append((pointer + "/\(index)", index < a.count ? a[index] : nil, index < b.count ? b[index] : nil))
                }
            default:
                if old != new { found.append(FieldChange(pointer: pointer, old: old, new: new)) }
            }
        }
        return found
    }

    /// RFC 6901: `~` as `~0`, `/` as `~1`.
    private static func escape(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}
