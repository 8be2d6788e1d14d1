import FormSyncPattern
import Foundation
import Synchronization

/// The validation rules of the spec language, applied one field at a time and collecting every
/// failure. A field's location is only worked out when one of its rules fails, so a payload
/// that breaks nothing costs no string building. Generated `validate()` methods are a list of calls to these, so the client and the
/// reference server run the same rules.
@_spi(Generated) public struct FieldValidator: Sendable {
    /// The failures found so far, in the order the rules ran.
    public private(set) var errors: [FieldError] = []

    public init() {}

    /// The pattern work one payload may take in all (steps of `Pattern`'s machine): each value
    /// is bounded by `Pattern.workBudget`, and a payload of thousands of values by this; past
    /// it, a value left to check is refused as too costly.
    package static let payloadPatternBudget = 20_000_000
    /// What is left of this validation's pattern work.
    package var patternWorkLeft = FieldValidator.payloadPatternBudget

    /// Records a failure.
    public mutating func fail(_ pointer: String, _ code: String, _ detail: String) {
        errors.append(FieldError(pointer: pointer, code: code, detail: detail))
    }

    /// A required value: nil is missing.
    public mutating func require<T>(_ value: T?, at pointer: @autoclosure () -> String) {
        if value == nil { fail(pointer(), "required", "This field is required.") }
    }

    /// A required text: nil, empty or only white space is missing.
    public mutating func require(_ value: String?, at pointer: @autoclosure () -> String) {
        if (value ?? "").allSatisfy(\.isWhitespace) { fail(pointer(), "required", "This field is required.") }
    }

    /// A required list: empty is missing.
    public mutating func require<Element>(_ value: [Element], at pointer: @autoclosure () -> String) {
        if value.isEmpty { fail(pointer(), "required", "This field is required.") }
    }

    /// Text length in Unicode scalars (as JSON Schema's `minLength` and `maxLength` count).
    public mutating func length(_ value: String?, min: Int?, max: Int?, at pointer: @autoclosure () -> String) {
        guard let value else { return }
        // A scalar takes one to four UTF-8 bytes: the byte count (known without a walk) settles
        // most values; the scalars are counted only when it cannot.
        let bytes = value.utf8.count
        var scalars: Int?
        func count() -> Int {
            if let scalars { return scalars }
            let counted = value.unicodeScalars.count
            scalars = counted
            return counted
        }
        if let min, (bytes + 3) / 4 < min, count() < min { fail(pointer(), "min_length", "Must be at least \(min) characters long.") }
        if let max, bytes > max, count() > max { fail(pointer(), "max_length", "Must be at most \(max) characters long.") }
    }

    /// The whole text must match the pattern (FormSync's pattern language, `Pattern`).
    public mutating func pattern(_ value: String?, _ pattern: String, at pointer: @autoclosure () -> String) {
        guard let value, !value.isEmpty else { return }
        guard let compiled = Self.compiled(pattern) else {
            fail(pointer(), "pattern", "The pattern of this field is not one FormSync accepts.")
            return
        }
        let (verdict, steps) = compiled.check(value, budget: min(Pattern.workBudget, patternWorkLeft))
        patternWorkLeft = max(0, patternWorkLeft - steps)
        switch verdict {
        case .match: break
        case .noMatch: fail(pointer(), "pattern", "Does not have the expected format.")
        case .tooCostly: fail(pointer(), "pattern", "Too long to check against the expected format; shorten it.")
        }
    }

    /// A number within bounds.
    public mutating func range<T: Comparable>(_ value: T?, min: T?, max: T?, at pointer: @autoclosure () -> String) {
        guard let value else { return }
        if let min, value < min { fail(pointer(), "min", "Must be at least \(min).") }
        if let max, value > max { fail(pointer(), "max", "Must be at most \(max).") }
    }

    /// An amount within bounds (in minor units) and, when the spec fixes one, in its currency.
    public mutating func money(_ value: Money?, min: Int64?, max: Int64?, currency: String?, at pointer: @autoclosure () -> String) {
        guard let value else { return }
        if value.currency.count != 3 || !value.currency.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) {
            fail(pointer(), "currency", "'\(value.currency)' is not an ISO 4217 currency code.")
        } else if let currency, value.currency != currency {
            fail(pointer(), "currency", "Must be in \(currency).")
        }
        if let min, value.minorUnits < min { fail(pointer(), "min", "Must be at least \(min) minor units.") }
        if let max, value.minorUnits > max { fail(pointer(), "max", "Must be at most \(max) minor units.") }
    }

    /// The number of values of a multi-valued field.
    public mutating func count(_ count: Int, min: Int?, max: Int?, at pointer: @autoclosure () -> String) {
        if let min, count < min { fail(pointer(), "min_count", "Needs at least \(min) item\(min == 1 ? "" : "s").") }
        if let max, count > max { fail(pointer(), "max_count", "Takes at most \(max) item\(max == 1 ? "" : "s").") }
    }

    /// The values of a multi-choice field: each at most once (a choice is chosen or not).
    public mutating func unique<T: Hashable>(_ values: [T], at pointer: @autoclosure () -> String) {
        if Set(values).count != values.count { fail(pointer(), "unique", "Each option may be chosen only once.") }
    }

    /// A file's size and media type, when the reference carries them; a pending file (named by
    /// its digest, before its bytes reach the server) must carry all three. `defers`: the
    /// field's files may go after the submission (`defer:` in the spec); `eager`: devices fetch
    /// them as soon as they pull a record holding them (`download: eager`).
    public mutating func file(
        _ ref: FileRef?, maxBytes: Int64?, contentTypes: [String], defers: Bool = false, eager: Bool = false,
        at pointer: @autoclosure () -> String
    ) {
        guard let ref else { return }
        if let maxBytes, let size = ref.byteCount, size > maxBytes {
            fail(pointer(), "max_bytes", "The file is \(size) bytes; the limit is \(maxBytes).")
        }
        if !contentTypes.isEmpty, let type = ref.contentType?.lowercased(),
            !contentTypes.contains(where: { Self.mediaType(type, matches: $0) })
        {
            fail(pointer(), "content_type", "Files of type \(type) are not accepted here.")
        }
        if let size = ref.byteCount, size < 0 { fail(pointer(), "invalid", "A file's size cannot be negative.") }
        if let digest = ref.digest {
            if FileRef.sha256(of: digest) == nil { fail(pointer(), "invalid", "The digest must be sha-256=:<base64>: of 32 bytes.") }
            if ref.id == 0 && (ref.byteCount == nil || ref.contentType == nil) {
                fail(pointer(), "invalid", "A pending file needs its byte_count and content_type.")
            }
        } else if ref.id == 0 {
            fail(pointer(), "invalid", "The file reference is empty.")
        }
        if let uses = Self.fileUses {
            uses.add(FileUse(pointer: pointer(), ref: ref, maxBytes: maxBytes, contentTypes: contentTypes, defers: defers, eager: eager))
        }
    }

    /// A reference must hold a real or placeholder id, never 0.
    public mutating func reference(_ ref: EntityRef?, at pointer: @autoclosure () -> String) {
        if let ref, ref.id == 0 { fail(pointer(), "invalid", "The reference is empty.") }
    }

    /// Latitude within ±90 and longitude within ±180, both finite.
    public mutating func geopoint(_ point: GeoPoint?, at pointer: @autoclosure () -> String) {
        guard let point else { return }
        if !(point.latitude.isFinite && (-90...90).contains(point.latitude)) {
            fail(JSONPointer.appending(pointer(), "latitude"), "range", "Latitude must be between -90 and 90.")
        }
        if !(point.longitude.isFinite && (-180...180).contains(point.longitude)) {
            fail(JSONPointer.appending(pointer(), "longitude"), "range", "Longitude must be between -180 and 180.")
        }
        if let accuracy = point.accuracy, !(accuracy.isFinite && accuracy >= 0) {
            fail(JSONPointer.appending(pointer(), "accuracy"), "range", "Accuracy must be 0 or more metres.")
        }
    }

    static func mediaType(_ type: String, matches accepted: String) -> Bool {
        MediaSignature.matches(type, accepted: accepted)
    }

    /// Compiled patterns; nil for one the engine refuses (a spec checker would have).
    private static let cache = Mutex<[String: Pattern?]>([:])

    /// Patterns come from generated code (a few per form), so the cache stays small; one that
    /// grew past 1,000 entries (an app passing patterns of its own) starts again.
    static func compiled(_ pattern: String) -> Pattern? {
        if let cached = cache.withLock({ $0[pattern] }) { return cached }
        let compiled = try? Pattern(pattern)
        cache.withLock {
            if $0.count >= 1000 { $0.removeAll() }
            $0[pattern] = .some(compiled)
        }
        return compiled
    }
}
