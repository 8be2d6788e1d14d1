/// The media types devices send under another name, read as their registered one: the same
/// table as the runtime's `MediaSignature.canonical` (a test holds them together), for what
/// the generator writes without the runtime: the published JSON Schema and the preview's script.
package enum MediaTypeAliases {
    /// Alias → registered name.
    package static let canonical: [String: String] = [
        "image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg",
        "audio/x-m4a": "audio/mp4", "audio/m4a": "audio/mp4",
        "audio/x-wav": "audio/wav", "audio/wave": "audio/wav", "audio/vnd.wave": "audio/wav",
        "audio/x-aac": "audio/aac",
    ]

    /// `type` (lower case) and every alias of its registered name.
    package static func names(of type: String) -> [String] {
        let registered = canonical[type] ?? type
        return [registered] + canonical.filter { $0.value == registered }.map(\.key).sorted()
    }

    /// The table as a JavaScript object literal, for the preview's validator.
    package static var javaScript: String {
        "{ " + canonical.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \"\($0.value)\"" }.joined(separator: ", ") + " }"
    }
}
