import FormSyncTorture
import Testing

/// A device that crashed is shown by its crash's head, not only by the tail of its output.
struct DeviceOutputTests {
    @Test func aCrashedDevicesExcerptKeepsTheFatalErrorAndTheCrashedThreadBeforeTheTail() {
        let others = (1...200).map { "Thread \($0) \"-qos.overcommit\":\n  0 0x00007f3137beaf16 __futex_abstimed_wait_common" }
        let text =
            ([
                "captured 12", "Fatal error: Index out of range", "💣 Program crashed: Illegal instruction", "Thread 3 crashed:",
                "0 Outbox.flush",
            ]
            + others + ["Registers:", "rax 0x0000000200000003"]).joined(separator: "\n")
        let excerpt = DeviceOutput.excerpt(text)
        #expect(excerpt.hasPrefix("Fatal error: Index out of range"))
        #expect(excerpt.contains("Thread 3 crashed:\n0 Outbox.flush"))
        #expect(excerpt.hasSuffix("rax 0x0000000200000003"))
        #expect(excerpt.count < 5000)
    }

    @Test func anOutputWithoutACrashIsShownByItsTail() {
        let text = (1...1000).map { "line \($0)" }.joined(separator: "\n")
        let excerpt = DeviceOutput.excerpt(text)
        #expect(excerpt.hasSuffix("line 1000"))
        #expect(!excerpt.contains("line 1\n"))
    }
}
