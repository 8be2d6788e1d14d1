import Foundation

/// The checked-in record of every released shape (`formspecs.lock` beside the specs): for each
/// form and record, the shape of each version that was ever generated. A released version's
/// shape never changes; a changed shape needs a new version, and the lock keeps every old one
/// so that `diff`, the upgrade checks and the server know what devices may still hold.
public struct SpecLock: Codable, Sendable, Equatable {
    /// The lock format's version.
    public var lockVersion = 1
    /// Spec name → version (as text) → its shape.
    public var specs: [String: [String: SpecShape]] = [:]

    public init() {}

    /// The lock's file name, beside the specs.
    public static let fileName = "formspecs.lock"

    /// Reads the lock at `path`; an empty lock when there is none yet.
    public static func read(_ path: String) throws -> SpecLock {
        guard FileManager.default.fileExists(atPath: path) else { return SpecLock() }
        guard let data = FileManager.default.contents(atPath: path) else { throw LockError(path: path, reason: "cannot be read") }
        do {
            return try JSONDecoder().decode(SpecLock.self, from: data)
        } catch {
            throw LockError(path: path, reason: "is not a FormSync lock file (\(error))")
        }
    }

    /// Canonical JSON: sorted keys, indented, so a change reads well in review.
    public func rendered() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self) + "\n"
    }

    /// The versions recorded for `name`, oldest first.
    public func versions(of name: String) -> [(version: Int, shape: SpecShape)] {
        (specs[name] ?? [:]).compactMap { key, shape in Int(key).map { ($0, shape) } }.sorted { $0.version < $1.version }
    }

    /// A lock that cannot be read.
    public struct LockError: Error, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// Compares the specs with the lock. A version the lock holds with another shape is an
    /// error (a released shape edited in place: bump the version); so is a version older than
    /// the newest released one. Returns the lock with every current version recorded, and the
    /// problems, each at the spec's `version:`.
    public func updated(
        with specs: [(path: String, spec: CheckedSpec)], releasedIn source: String = SpecLock.fileName
    ) -> (lock: SpecLock, diagnostics: [(index: Int, diagnostic: Diagnostic)]) {
        var lock = self
        var found: [(Int, Diagnostic)] = []
        for (index, (path, spec)) in specs.enumerated() {
            let shape: SpecShape
            let location: SourceLocation
            if let form = spec.form {
                shape = SpecShape(form: form)
                location = form.versionLocation ?? form.nameLocation
            } else if let record = spec.record {
                shape = SpecShape(record: record)
                location = record.versionLocation ?? record.nameLocation
            } else {
                continue
            }
            let released = versions(of: shape.name)
            if let newest = released.last?.version, shape.version < newest {
                found.append(
                    (
                        index,
                        Diagnostic(
                            .error, path: path, at: location,
                            "\(shape.kind) \(shape.name) is at version \(shape.version), older than version \(newest) released in \(source); versions only go up"
                        )
                    ))
                continue
            }
            if let same = released.first(where: { $0.version == shape.version }) {
                if same.shape != shape {
                    let next = (released.last?.version ?? shape.version) + 1
                    let what = SpecDiff.changes(from: same.shape, to: shape).first.map { ": \($0)" } ?? ""
                    found.append(
                        (
                            index,
                            Diagnostic(
                                .error, path: path, at: location,
                                "the shape of \(shape.kind) \(shape.name) changed but its version is still \(shape.version), released in \(source)\(what); bump version to \(next)"
                            )
                        ))
                }
                continue
            }
            lock.specs[shape.name, default: [:]][String(shape.version)] = shape
        }
        return (lock, found)
    }
}
