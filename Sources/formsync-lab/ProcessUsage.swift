import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What this process (or its waited-for children) has used: CPU time, peak memory and bytes
/// written, in the same units on every platform (`ru_maxrss` is KiB on Linux, bytes on Apple
/// platforms).
enum ProcessUsage {
    static func usage(children: Bool) -> rusage {
        var usage = rusage()
        #if canImport(Darwin)
            getrusage(children ? RUSAGE_CHILDREN : RUSAGE_SELF, &usage)
        #elseif canImport(Glibc)
            getrusage(__rusage_who_t(children ? RUSAGE_CHILDREN.rawValue : RUSAGE_SELF.rawValue), &usage)
        #elseif canImport(Musl)
            getrusage(children ? RUSAGE_CHILDREN : RUSAGE_SELF, &usage)
        #endif
        return usage
    }

    /// CPU seconds, user and system, all threads.
    static func cpuSeconds(children: Bool = false) -> Double {
        let usage = usage(children: children)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// The peak resident memory, in MiB.
    static func peakMiB(children: Bool = false) -> Double {
        let usage = usage(children: children)
        #if canImport(Darwin)
            return Double(usage.ru_maxrss) / 1_048_576
        #elseif canImport(Glibc) || canImport(Musl)
            return Double(usage.ru_maxrss) / 1024
        #endif
    }

    /// Bytes handed to `write` and `pwrite` since `before` (an earlier `bytesWritten()`); nil
    /// where the system does not say.
    static func bytesWritten(since before: Int?) -> Int? {
        before.flatMap { before in bytesWritten().map { $0 - before } }
    }

    /// Bytes this process has handed to `write` and `pwrite` so far, all files (Linux's
    /// `/proc/self/io`, `wchar`); nil where the system does not say (Darwin).
    static func bytesWritten() -> Int? {
        #if canImport(Darwin)
            return nil
        #elseif canImport(Glibc) || canImport(Musl)
            guard let handle = FileHandle(forReadingAtPath: "/proc/self/io") else { return nil }
            defer { try? handle.close() }
            guard let data = try? handle.read(upToCount: 4096), let text = String(data: data, encoding: .utf8) else { return nil }
            for line in text.split(separator: "\n") where line.hasPrefix("wchar:") {
                return Int(line.dropFirst("wchar:".count).trimmingCharacters(in: .whitespaces))
            }
            return nil
        #endif
    }
}
