import Foundation

/// Runs many seeds of `Simulation` (two at a time) and sums them up; a failing seed is
/// shrunk to the fewest schedule steps that still fail, and reported with its trace so it can
/// be replayed with `formsync-lab torture sim --first SEED --seeds 1 --trace`.
package struct SimulationRunner {
    package struct Summary: Sendable, CustomStringConvertible {
        package var seeds = 0
        package var steps = 0
        package var captured = 0
        package var confirmed = 0
        package var parked: [String: Int] = [:]
        package var requests = 0
        package var faults: [String: Int] = [:]
        package var engineWakes = 0
        package var seconds = 0.0
        package var failed: [(seed: UInt64, report: String)] = []

        package var description: String {
            let faultList = faults.sorted { $0.value > $1.value }.prefix(14).map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            let parkedList =
                parked.isEmpty ? "none" : parked.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            var lines = [
                "seeds: \(seeds) (\(steps) schedule steps) in \(String(format: "%.1f", seconds)) s; failed: \(failed.count)",
                "captured: \(captured); confirmed on the server exactly once: \(confirmed); parked with a reason (then discarded): \(parkedList)",
                "requests: \(requests); sync engine woken by its own timers: \(engineWakes); faults injected: \(faultList)",
            ]
            for failure in failed.prefix(5) { lines.append(failure.report) }
            return lines.joined(separator: "\n")
        }
    }

    let first: UInt64
    let count: Int
    let steps: Int
    let folder: URL
    let progress: @Sendable (String) -> Void

    package init(first: UInt64, count: Int, steps: Int, folder: URL, progress: @escaping @Sendable (String) -> Void = { _ in }) {
        self.first = first
        self.count = count
        self.steps = steps
        self.folder = folder
        self.progress = progress
    }

    package func run(trace: Bool = false) async -> Summary {
        let started = Date()
        var summary = Summary()
        let (first, count, steps, folder, progress) = (first, count, steps, folder, progress)
        await withTaskGroup(of: (UInt64, Simulation.Outcome, String?).self) { group in
            var next = 0
            func start() {
                guard next < count else { return }
                let seed = first &+ UInt64(next)
                next += 1
                group.addTask {
                    let simulation = Simulation(seed: seed, folder: folder)
                    let actions = Simulation.schedule(seed: seed, steps: steps)
                    let outcome = await simulation.run(actions)
                    guard !outcome.failures.isEmpty || trace else { return (seed, outcome, nil) }
                    return (
                        seed, outcome,
                        await Self.report(
                            seed: seed, simulation: simulation, actions: actions, outcome: outcome, shrink: !outcome.failures.isEmpty)
                    )
                }
            }
            start()
            start()
            while let (seed, outcome, report) = await group.next() {
                summary.seeds += 1
                summary.steps += steps
                summary.captured += outcome.captured
                summary.confirmed += outcome.confirmed
                summary.requests += outcome.requests
                summary.engineWakes += outcome.engineWakes
                for (key, value) in outcome.parked { summary.parked[key, default: 0] += value }
                for (key, value) in outcome.faults { summary.faults[key, default: 0] += value }
                if !outcome.failures.isEmpty { summary.failed.append((seed, report ?? "")) } else if let report { progress(report) }
                if summary.seeds % 500 == 0 { progress("\(summary.seeds) seeds, \(summary.failed.count) failed") }
                start()
            }
        }
        summary.seconds = Date().timeIntervalSince(started)
        return summary
    }

    /// The seed's report: what broke, the fewest steps that still break it, and their trace.
    package static func report(
        seed: UInt64, simulation: Simulation, actions: [Simulation.Action], outcome: Simulation.Outcome, shrink: Bool
    ) async -> String {
        var smallest = actions
        var result = outcome
        if shrink {
            // Greedy shrinking: drop chunks of steps, halving the chunk, while it still fails.
            var chunk = max(1, smallest.count / 2)
            var runs = 0
            while chunk >= 1 && runs < 120 {
                var start = 0
                var removedAny = false
                while start < smallest.count && runs < 120 {
                    var candidate = smallest
                    candidate.removeSubrange(start..<min(start + chunk, candidate.count))
                    runs += 1
                    let attempt = await simulation.run(candidate)
                    if !attempt.failures.isEmpty {
                        smallest = candidate
                        result = attempt
                        removedAny = true
                    } else {
                        start += chunk
                    }
                }
                if !removedAny { chunk /= 2 }
            }
        }
        var lines = ["seed \(seed): \(result.failures.isEmpty ? "passed" : "FAILED")"]
        lines += result.failures.prefix(10).map { "  - " + $0 }
        if shrink {
            lines.append(
                "  smallest failing schedule (\(smallest.count) of \(actions.count) steps): \(smallest.map(\.description).joined(separator: "; "))"
            )
        }
        lines.append("  trace (replay: formsync-lab torture sim --first \(seed) --seeds 1 --trace):")
        lines += result.trace.suffix(120).map { "    " + $0 }
        return lines.joined(separator: "\n")
    }
}
