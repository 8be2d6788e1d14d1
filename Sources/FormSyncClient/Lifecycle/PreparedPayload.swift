@_spi(Generated) import FormSyncModel
import Foundation

/// A payload checked and encoded before the outbox's thread is needed: validating, encoding and
/// digesting run on the caller's thread, beside other enqueues' commits.
struct PreparedPayload: Sendable {
    var json: Data
    var baseJSON: Data?
    /// What identifies this exact submission (`digest(form:version:baseVersion:payload:)`).
    var digest: Data

    /// Validates `payload` (field errors before anything is queued), encodes it and its base,
    /// and digests what identifies this exact submission.
    init<P: FormPayload>(_ payload: P, base: (payload: P, version: String)?) throws {
        let errors = payload.validate()
        guard errors.isEmpty else { throw OutboxError.invalidPayload(errors) }
        json = try Self.encode(payload)
        baseJSON = try base.map { try Self.encode($0.payload) }
        digest = Self.digest(form: P.formName, version: P.formVersion, baseVersion: base?.version, payload: json)
    }

    /// What identifies an exact submission of a document: its form, version, base and bytes.
    static func digest(form: String, version: Int, baseVersion: String?, payload: Data) -> Data {
        var hasher = SHA256()
        hasher.update(Data("\(form)\n\(version)\n\(baseVersion ?? "")\n".utf8))
        hasher.update(payload)
        return hasher.finalize()
    }

    /// A payload's JSON as the outbox stores and sends it.
    static func encode<T: Encodable>(_ value: T) throws -> Data {
        do {
            return try FormRegistry.encode(value)
        } catch {
            throw OutboxError.invalidPayload([
                FieldError(pointer: JSONPointer.root, code: "invalid", detail: "The payload cannot be encoded: \(error)")
            ])
        }
    }
}
