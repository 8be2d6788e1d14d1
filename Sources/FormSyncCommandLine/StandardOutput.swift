#if canImport(Darwin)
    @preconcurrency import Darwin
#elseif canImport(Glibc)
    @preconcurrency import Glibc
#elseif canImport(Musl)
    @preconcurrency import Musl
#endif

/// Standard output as a long-running command needs it.
package enum StandardOutput {
    /// Each line reaches a pipe or a log file as it is printed (C's stdio would hold it in a 4 KiB
    /// buffer until the process ends), so a run shows its progress wherever it is read.
    package static func lineBuffered() {
        setvbuf(stdout, nil, _IOLBF, 0)
    }
}
