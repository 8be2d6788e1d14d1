import Synchronization

/// A file reference a payload holds, where it is and what its field accepts: what a server
/// checks against the file it stored, and what an outbox needs to send a file after its
/// submission. Gathered by running the payload's own `validate()` (`FileUse.gathering`), so
/// generated code and the spec interpreter report them alike.
package struct FileUse: Sendable, Equatable {
    /// The JSON Pointer of the reference in the payload.
    package var pointer: String
    package var ref: FileRef
    package var maxBytes: Int64?
    /// The field's accepted media types; empty accepts any.
    package var contentTypes: [String]
    /// Whether the field's files may go after the submission.
    package var defers: Bool
    /// Whether devices fetch the field's files as soon as they pull them.
    package var eager: Bool

    package init(pointer: String, ref: FileRef, maxBytes: Int64?, contentTypes: [String], defers: Bool, eager: Bool = false) {
        self.eager = eager
        self.pointer = pointer
        self.ref = ref
        self.maxBytes = maxBytes
        self.contentTypes = contentTypes
        self.defers = defers
    }

    /// Whether a file whose bytes say `detected` (nil: not recognised) may stand in this field.
    package func accepts(detected: String?) -> Bool {
        guard !contentTypes.isEmpty else { return true }
        guard let detected else { return false }
        return contentTypes.contains { MediaSignature.matches(detected, accepted: $0) }
    }

    /// Runs `body` (which runs a payload's `validate()`) and returns its result with every file
    /// reference the validation met, in the order its rules ran.
    package static func gathering<T>(_ body: () throws -> T) rethrows -> (T, [FileUse]) {
        let collector = Collector()
        let result = try FieldValidator.$fileUses.withValue(collector) { try body() }
        return (result, collector.uses)
    }

    /// Where `FieldValidator.file` reports the references it checks, while someone listens.
    package final class Collector: Sendable {
        private let list = Mutex<[FileUse]>([])
        package init() {}
        package func add(_ use: FileUse) { list.withLock { $0.append(use) } }
        package var uses: [FileUse] { list.withLock { $0 } }
    }
}

extension FieldValidator {
    /// Set while `FileUse.gathering` runs a validation.
    @TaskLocal package static var fileUses: FileUse.Collector?
}
