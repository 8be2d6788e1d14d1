import FormSyncModel
import Foundation

extension ItemLifecycle {
    /// Whether an item in `state` waits for a person (parked or blocked).
    static func isStuck(_ state: State) -> Bool {
        state == .rejected || state == .conflict || state == .exhausted || state == .blocked
    }

    /// Why a blocked item waits, as every list shows it.
    static let blockedReason = "waiting for an item it depends on, which needs attention"

    /// Blocks everything that depends on `placeholder`, and what depends on those.
    func blockDependents(of placeholder: Int64, workspace: String, now: Int64) throws {
        var queue = [placeholder]
        while let next = queue.popLast() {
            for id in try store.dependents(of: next) {
                guard var row = try store.item(id), row.workspace == workspace, row.state == .pending else { continue }
                row.lastError = Self.blockedReason
                move(&row, to: .blocked)
                try store.update(row, now: now)
                try store.refreshLane(workspace: row.workspace, lane: row.lane)
                report.blocked += 1
                queue += try store.producedPlaceholders(of: row)
            }
        }
    }

    /// After `placeholder` landed, or its producer went back to pending: dependents waiting in a
    /// lane may now be due, and blocked dependents whose other dependencies are fine are released.
    func releaseDependents(of placeholder: Int64, workspace: String, now: Int64) throws {
        var queue = [placeholder]
        while let next = queue.popLast() {
            for id in try store.dependents(of: next) {
                guard var row = try store.item(id), row.workspace == workspace else { continue }
                if row.state == .blocked, try !dependencyProblem(row.id, workspace: workspace) {
                    row.lastError = nil
                    row.nextAttemptAt = now
                    move(&row, to: .pending)
                    try store.update(row, now: now)
                    queue += try store.producedPlaceholders(of: row)
                }
                if row.state == .pending { try store.refreshLane(workspace: row.workspace, lane: row.lane) }
            }
        }
    }

    /// Whether any unresolved dependency of `item` is parked, blocked or discarded.
    func dependencyProblem(_ item: Int64, workspace: String) throws -> Bool {
        for placeholder in try store.dependencies(of: item) where try !store.isResolved(placeholder, workspace: workspace) {
            guard let producer = try store.producer(of: placeholder, workspace: workspace) else { return true }
            if Self.isStuck(producer.state) { return true }
        }
        return false
    }

    /// Checks that every placeholder has landed or is produced by a stored item of the current
    /// workspace (throwing `unknownPlaceholder` otherwise: another workspace's placeholder is
    /// unknown here); returns whether any producer needs attention.
    func checkDependencies(_ placeholders: [Int64]) throws -> Bool {
        var stuck = false
        for placeholder in placeholders where try !store.isResolved(placeholder, workspace: workspace) {
            guard let producer = try store.producer(of: placeholder, workspace: workspace) else {
                throw OutboxError.unknownPlaceholder(placeholder)
            }
            if Self.isStuck(producer.state) { stuck = true }
        }
        return stuck
    }

    /// Whether `placeholder` is already landed or produced by a stored item of the current workspace.
    func isKnown(_ placeholder: Int64) throws -> Bool {
        try store.isResolved(placeholder, workspace: workspace) || store.producer(of: placeholder, workspace: workspace) != nil
    }

    /// Makes `placeholders` the dependencies of item `id` (each checked as `checkDependencies`
    /// does); those `deferrable` marks true may land after it.
    func replaceDependencies(of id: Int64, with placeholders: [Int64], deferrable: [Int64: Bool] = [:]) throws {
        _ = try checkDependencies(placeholders)
        try store.removeDependencies(item: id)
        for placeholder in placeholders {
            try store.addDependency(item: id, placeholder: placeholder, deferrable: deferrable[placeholder] ?? false)
        }
    }
}
