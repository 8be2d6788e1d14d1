import FormSyncTesting
import Foundation
import Testing

/// Every platform-specific call in `Sources/` sits inside an `#if canImport(…)` branch for its
/// platform, and every such chain has a branch for each platform: Darwin, Glibc and Musl.
struct PlatformGuardTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Calls and constants that exist (or are spelled this way) only on Linux's C libraries.
    static let linuxOnly = [
        "Glibc.", "Musl.", "MSG_NOSIGNAL", "SOCK_STREAM.rawValue", "SOCK_CLOEXEC", "pipe2", "accept4", "epoll_", "/proc/", "fdatasync(",
        "__rlimit_resource_t", "__rusage_who_t", "RUSAGE_SELF.rawValue", "RUSAGE_CHILDREN.rawValue", "sched_getaffinity", "malloc_trim",
        "prctl(", "SYS_gettid", "O_DIRECT", "fallocate(",
    ]
    /// And those only on Apple platforms.
    static let darwinOnly = ["Darwin.", "F_FULLFSYNC", "SO_NOSIGPIPE", "POSIX_SPAWN_CLOEXEC_DEFAULT", "sin_len", "F_NOCACHE", "mach_"]

    struct Problem: CustomStringConvertible {
        var file: String
        var line: Int
        var message: String
        var description: String { "\(file):\(line): \(message)" }
    }

    /// The problems in one file's text.
    static func problems(in text: String, file: String) -> [Problem] {
        var problems: [Problem] = []
        // The open #if blocks: each holds the conditions of its branches so far and the current one.
        var stack: [(branches: [String], line: Int)] = []
        var inBlockComment = false
        for (index, raw) in text.components(separatedBy: "\n").enumerated() {
            let number = index + 1
            let line = raw.trimmingCharacters(in: .whitespaces)
            if inBlockComment {
                if line.contains("*/") { inBlockComment = false }
                continue
            }
            if line.hasPrefix("/*") {
                inBlockComment = !line.contains("*/")
                continue
            }
            if line.hasPrefix("//") { continue }
            if line.hasPrefix("#if ") {
                stack.append(([String(line.dropFirst(4))], number))
                continue
            }
            if line.hasPrefix("#elseif ") {
                if !stack.isEmpty { stack[stack.count - 1].branches.append(String(line.dropFirst(8))) }
                continue
            }
            if line == "#else" {
                if !stack.isEmpty { stack[stack.count - 1].branches.append("else") }
                continue
            }
            if line.hasPrefix("#endif") {
                if let block = stack.popLast() { problems += chainProblems(block.branches, file: file, line: block.line) }
                continue
            }
            let code = line.components(separatedBy: "//").first ?? line
            let current = stack.map { $0.branches.last ?? "" }
            for pattern in linuxOnly where code.contains(pattern) {
                if !current.contains(where: {
                    $0.contains("canImport(Glibc)") || $0.contains("canImport(Musl)") || $0.contains("os(Linux)")
                }) {
                    problems.append(
                        Problem(
                            file: file, line: number,
                            message: "'\(pattern)' exists only on Linux: put it in a #if canImport(Glibc) / canImport(Musl) branch"))
                }
            }
            for pattern in darwinOnly where code.contains(pattern) {
                if !current.contains(where: { $0.contains("canImport(Darwin)") || $0.contains("os(macOS)") || $0.contains("os(iOS)") }) {
                    problems.append(
                        Problem(
                            file: file, line: number,
                            message: "'\(pattern)' exists only on Apple platforms: put it in a #if canImport(Darwin) branch"))
                }
            }
        }
        return problems
    }

    /// A chain that picks a platform must pick each: Darwin, Glibc and Musl (or end in #else).
    static func chainProblems(_ branches: [String], file: String, line: Int) -> [Problem] {
        let joined = branches.joined(separator: " ")
        let platforms = ["Darwin", "Glibc", "Musl"]
        guard platforms.contains(where: { joined.contains("canImport(\($0))") }) else { return [] }
        if branches.last == "else" { return [] }
        let missing = platforms.filter { !joined.contains("canImport(\($0))") }
        return missing.isEmpty
            ? [] : [Problem(file: file, line: line, message: "this #if has no branch for \(missing.joined(separator: ", "))")]
    }

    @Test func everyPlatformSpecificCallInSourcesIsInsideItsPlatformsBranch() async throws {
        try await OffThePool.compute {
            let sources = Self.root.appendingPathComponent("Sources")
            let walker = try #require(FileManager.default.enumerator(atPath: sources.path))
            var problems: [Problem] = []
            var files = 0
            for case let path as String in walker where path.hasSuffix(".swift") {
                files += 1
                let text = try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)
                problems += Self.problems(in: text, file: "Sources/" + path)
            }
            #expect(files > 100)
            #expect(problems.isEmpty, "\(problems.map(\.description).joined(separator: "\n"))")
        }
    }

    @Test func theCheckFindsAnUnguardedCallAndAChainWithoutABranch() {
        let unguarded = Self.problems(in: "let n = send(fd, p, c, Int32(MSG_NOSIGNAL))\n", file: "x.swift")
        #expect(unguarded.count == 1)
        let guarded = Self.problems(
            in: "#if canImport(Glibc)\nlet n = send(fd, p, c, Int32(MSG_NOSIGNAL))\n#else\nlet n = 0\n#endif\n", file: "x.swift")
        #expect(guarded.isEmpty)
        let noMusl = Self.problems(
            in: "#if canImport(Glibc)\nimport Glibc\n#elseif canImport(Darwin)\nimport Darwin\n#endif\n", file: "x.swift")
        #expect(noMusl.map(\.message) == ["this #if has no branch for Musl"])
        let darwinOutside = Self.problems(
            in: "#if canImport(Glibc)\nx()\n#elseif canImport(Musl)\ny()\n#elseif canImport(Darwin)\nz()\n#endif\nfcntl(fd, F_FULLFSYNC)\n",
            file: "x.swift")
        #expect(darwinOutside.count == 1)
    }
}
