import Foundation
import Synchronization

/// Ends a test process that has run far longer than any test run should, after naming the
/// tests whose fixtures are still alive: a hang then fails CI within minutes, with a place to
/// look, instead of running into CI's own time limit with nothing printed.
package enum TestRunWatchdog {
    private static let open = Mutex<(next: Int, names: [Int: String])>((0, [:]))

    /// Seconds from the first fixture to the end of the process: `FORMSYNC_TEST_WATCHDOG_SECONDS`,
    /// 900 by default (the suite takes a minute or two on two cores).
    private static let limit: Int = {
        let text = ProcessInfo.processInfo.environment["FORMSYNC_TEST_WATCHDOG_SECONDS"] ?? ""
        guard let seconds = Int(text), (10...86_400).contains(seconds) else { return 900 }
        return seconds
    }()

    private static let started: Void = {
        let seconds = Self.limit
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: Double(seconds))
            let names = open.withLock { $0.names.values.sorted() }
            let message =
                "test watchdog: the test process ran for \(seconds) s, far longer than the suite takes; ending it. "
                + "Tests whose fixtures are still alive: \(names.isEmpty ? "none" : names.joined(separator: ", "))\n"
            FileHandle.standardError.write(Data(message.utf8))
            exit(1)
        }
    }()

    /// Records that `test` holds a fixture (and starts the watchdog); pass the token to `leave`.
    package static func enter(_ test: String) -> Int {
        _ = started
        return open.withLock { state in
            state.next += 1
            state.names[state.next] = test
            return state.next
        }
    }

    /// The fixture of `token` is gone.
    package static func leave(_ token: Int) {
        _ = open.withLock { $0.names.removeValue(forKey: token) }
    }
}
