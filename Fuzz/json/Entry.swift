// libFuzzer target: the JSON slicer that reads what the network sends the device (the change
// feed's pages and the records in them, Sources/FormSyncModel/JSONObjectSlices.swift), checked
// against Foundation's JSON parser. Built by Fuzz/run.sh.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONSlices(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Data(bytes: data, count: size)
    let object = JSONObjectSlices(input)
    let array = JSONObjectSlices.elements(ofArray: input)
    if let object {
        // What it read round-trips: its sorted re-encoding reads back to the same members.
        precondition(JSONObjectSlices(object.data) == JSONObjectSlices(sortedMembersOf: object), "the re-encoded object reads differently")
    }
    // Foundation also reads a comma before a closing bracket, and reads `[\0]` as an empty
    // array; JSON (RFC 8259) allows neither (a raw NUL is nowhere valid) and the slicer refuses
    // both: such inputs are compared no further.
    guard !hasTrailingComma(input), !input.contains(0), let parsed = try? JSONSerialization.jsonObject(with: input, options: [.fragmentsAllowed]) else { return 0 }
    // Whatever Foundation reads as an object or an array, the slicer reads the same way.
    if let dictionary = parsed as? [String: Any] {
        guard let object else { preconditionFailure("an object Foundation reads was refused") }
        for (key, value) in dictionary {
            guard let slice = object[key] else {
                precondition(value is NSNull, "member \(key) is missing")
                continue
            }
            precondition(same(slice, value), "member \(key) differs")
        }
        precondition(object.members.count == dictionary.values.filter { !($0 is NSNull) }.count, "the member counts differ")
    } else {
        precondition(object == nil, "a non-object was read as an object")
    }
    if let list = parsed as? [Any] {
        guard let array else { preconditionFailure("an array Foundation reads was refused") }
        precondition(array.count == list.count, "the element counts differ")
        for (slice, value) in zip(array, list) { precondition(same(slice, value), "an element differs") }
    } else {
        precondition(array == nil, "a non-array was read as an array")
    }
    return 0
}

/// Whether `slice`, read on its own, is the value Foundation read in place.
private func same(_ slice: Data, _ value: Any) -> Bool {
    guard let read = try? JSONSerialization.jsonObject(with: slice, options: [.fragmentsAllowed]) else { return false }
    guard let read = read as? NSObject, let value = value as? NSObject else { return false }
    return read.isEqual(value)
}

extension JSONObjectSlices {
    /// The same members, in key order (how `data` writes them).
    init(sortedMembersOf other: JSONObjectSlices) {
        self.init()
        for member in other.members.sorted(by: { $0.key < $1.key }) { set(member.key, member.value) }
    }
}

/// Whether a comma outside strings is followed (after white space) by `]` or `}`.
private func hasTrailingComma(_ input: Data) -> Bool {
    var inString = false, escaped = false, afterComma = false
    for byte in input {
        if inString {
            if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
            continue
        }
        switch byte {
        case 0x22: inString = true; afterComma = false
        case 0x2C: afterComma = true
        case 0x5D, 0x7D: if afterComma { return true }
        case 0x20, 0x0A, 0x0D, 0x09: break
        default: afterComma = false
        }
    }
    return false
}
