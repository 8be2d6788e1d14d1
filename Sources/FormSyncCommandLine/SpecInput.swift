import FormSpec
import Foundation

/// The spec files named on a command line: a missing or unreadable path, or a folder without
/// specs, is a usage mistake (exit 2) that names the path and the system's reason.
package enum SpecInput {
    package static func files(_ paths: [String]) throws -> [String] {
        guard !paths.isEmpty else { throw UsageError("name at least one spec file or folder") }
        for path in paths {
            var info = stat()
            if stat(path, &info) != 0 { throw UsageError("\(path): \(String(cString: strerror(errno)))") }
            if access(path, R_OK) != 0 { throw UsageError("\(path): \(String(cString: strerror(errno)))") }
        }
        let files = SpecLoader.specFiles(in: paths)
        guard !files.isEmpty else { throw UsageError("no *.yaml specs found in \(paths.joined(separator: ", "))") }
        return files
    }
}
