@_spi(Generated) import FormSyncModel
import Testing

@testable import FormSyncCodegen

/// The media type aliases the generator writes into the JSON Schema and the preview's script
/// are the runtime's: a file reference the device's validator takes, the schema and the
/// preview take too (issue 44, defect 11).
struct MediaTypeAliasesTests {
    @Test func theGeneratorsAliasesAreTheRuntimes() {
        for (alias, registered) in MediaTypeAliases.canonical {
            #expect(MediaSignature.canonical(alias) == registered, "\(alias)")
        }
        for type in ["image/jpg", "image/pjpeg", "audio/x-m4a", "audio/m4a", "audio/x-wav", "audio/wave", "audio/vnd.wave", "audio/x-aac"] {
            #expect(MediaTypeAliases.canonical[type] == MediaSignature.canonical(type), "\(type) is an alias of the runtime's only")
        }
    }

    @Test func aFileReferenceUnderAnAliasOrWithAParameterPassesTheValidatorOfItsRegisteredType() {
        for type in ["image/jpg", "IMAGE/JPEG", "image/jpeg; q=0.9", "image/pjpeg"] {
            var validator = FieldValidator()
            validator.file(FileRef(id: 3, contentType: type), maxBytes: nil, contentTypes: ["image/jpeg"], at: "/photo")
            #expect(validator.errors.isEmpty, "\(type): \(validator.errors)")
        }
        var validator = FieldValidator()
        validator.file(FileRef(id: 3, contentType: "image/png"), maxBytes: nil, contentTypes: ["image/jpeg"], at: "/photo")
        #expect(validator.errors.map(\.code) == ["content_type"])
    }
}
