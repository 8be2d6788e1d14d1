import Foundation

/// Keeps every thread of Swift's cooperative pool busy, the way CPU-bound tasks of an app (or
/// of the tests running beside this one) do, until what a test waits for has happened.
enum BusyPool {
    /// Spins tasks on every thread of the pool until `happened` holds, or for at most a minute
    /// (a hang's bound); whether every one of them saw it happen while they spun. Four times
    /// as many as there are cores, and four more: dispatch lends the pool extra threads for a
    /// while after some were blocked, and each of those must spin too.
    static func spin(until happened: @escaping @Sendable () -> Bool) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<(4 * ProcessInfo.processInfo.activeProcessorCount + 4) {
                group.addTask {
                    let giveUp = Date().addingTimeInterval(60)
                    while !happened() && Date() < giveUp {}
                    return happened()
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
    }
}
