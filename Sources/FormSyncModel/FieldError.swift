import Foundation

/// One rule a payload breaks, located by a JSON Pointer (`#/lines/3/quantity`) so that a form,
/// a server in another language, or a problem reply (docs/PROTOCOL.md §6) can all point at the same field.
public struct FieldError: Codable, Sendable, Hashable, CustomStringConvertible {
    /// A JSON Pointer in URI-fragment form into the payload.
    public var pointer: String
    /// A stable machine code: `required`, `min`, `max`, `min_length`, `max_length`, `pattern`,
    /// `min_count`, `max_count`, `max_bytes`, `content_type`, `currency`, `range`, `invalid`,
    /// and from a spec's expressions `not_relevant`, `constraint`, `calculated`, `not_offered`.
    public var code: String
    /// A sentence for a person.
    public var detail: String

    public init(pointer: String, code: String, detail: String) {
        self.pointer = pointer
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(pointer): \(code): \(detail)" }
}

/// JSON Pointer helpers, in the URI-fragment form FormSync uses on the wire (docs/PROTOCOL.md §6).
@_spi(Generated) public enum JSONPointer {
    /// The pointer to the whole payload.
    public static let root = "#"

    /// `#/lines` + `3` gives `#/lines/3`; `~` and `/` in keys are escaped.
    public static func appending(_ pointer: String, _ token: String) -> String {
        pointer + "/" + token.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    /// `#/lines` + 3 gives `#/lines/3`.
    public static func appending(_ pointer: String, _ index: Int) -> String {
        pointer + "/" + String(index)
    }

    /// The unescaped reference tokens of a pointer; nil when it is not in `#/…` form.
    public static func tokens(_ pointer: String) -> [String]? {
        guard pointer.hasPrefix("#") else { return nil }
        let body = pointer.dropFirst()
        if body.isEmpty { return [] }
        guard body.hasPrefix("/") else { return nil }
        return body.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map {
            $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        }
    }
}

extension KeyedDecodingContainer {
    /// `decodeIfPresent`, with a failure always located at the field (or deeper): some
    /// decoders report a scalar's type mismatch at the top of the document, which would point
    /// a field error at the whole payload instead of the field. Generated `init(from:)` uses it.
    public func decodeField<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        let path = codingPath + [key]
        func located(_ context: DecodingError.Context) -> DecodingError.Context {
            context.codingPath.count >= path.count
                ? context
                : DecodingError.Context(
                    codingPath: path, debugDescription: context.debugDescription, underlyingError: context.underlyingError)
        }
        do {
            return try decodeIfPresent(T.self, forKey: key)
        } catch DecodingError.typeMismatch(let expected, let context) {
            throw DecodingError.typeMismatch(expected, located(context))
        } catch DecodingError.valueNotFound(let expected, let context) {
            throw DecodingError.valueNotFound(expected, located(context))
        } catch DecodingError.dataCorrupted(let context) {
            throw DecodingError.dataCorrupted(located(context))
        } catch let error where !(error is DecodingError) {
            // A number that does not fit its type surfaces as another error, which the decoder
            // would report as "not valid JSON" for the whole document.
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: path, debugDescription: "The value does not fit its type.", underlyingError: error))
        }
    }
}
