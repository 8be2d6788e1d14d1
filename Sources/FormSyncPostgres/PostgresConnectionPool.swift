import Foundation
import Synchronization

/// The connections of one PostgreSQL store. A unit of work (`scope`) uses one connection from
/// its first statement to its end, so that a transaction's statements share it; a statement
/// outside any unit borrows one for itself. A connection that broke (the server restarted) is
/// dropped, and the next use opens a new one.
final class PostgresConnectionPool: Sendable {
    private let url: String
    private let idle = Mutex<[PostgresConnection]>([])
    private let maxIdle: Int

    init(url: String, maxIdle: Int = 16) {
        self.url = url
        self.maxIdle = maxIdle
    }

    /// The unit of work running on this thread, if any, and the connection it holds.
    final class Scope: @unchecked Sendable {
        let pool: ObjectIdentifier
        var connection: PostgresConnection?
        /// A transaction is open on `connection`: it must not be swapped for another.
        var transactionOpen = false
        /// Changes were written in the transaction now open: the feed's sequencer runs after it commits.
        var changesWritten = false
        /// Rows the transaction now open locked or wrote, by key: read again in it, they cannot
        /// have changed, so they are answered without a round trip. Emptied when it begins and ends.
        var lockedRows: [String: any Sendable] = [:]

        init(pool: ObjectIdentifier) { self.pool = pool }
    }

    @TaskLocal static var scope: Scope?

    /// Counts the round trips of the statements run on the calling thread's task while it is
    /// bound (by a test or a measurement; nothing counts otherwise). Work other threads do
    /// meanwhile (the sequencer's passes) is not counted.
    @TaskLocal static var roundTripCounter: RoundTripCounter?

    /// A count of round trips (see `roundTripCounter`).
    final class RoundTripCounter: Sendable {
        private let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
        func add(_ n: Int) { count.add(n, ordering: .relaxed) }
    }

    /// The current unit of work of this pool, if one is open on this thread.
    var currentScope: Scope? {
        guard let scope = Self.scope, scope.pool == ObjectIdentifier(self) else { return nil }
        return scope
    }

    /// Runs `body` as one unit of work: every statement in it uses the same connection.
    func scope<T>(_ body: () throws -> T) rethrows -> T {
        if currentScope != nil { return try body() }
        let scope = Scope(pool: ObjectIdentifier(self))
        defer {
            if let connection = scope.connection { checkIn(connection) }
        }
        return try Self.$scope.withValue(scope) { try body() }
    }

    /// Runs `body` with the unit of work's connection, or one borrowed for it alone. A
    /// connection that PostgreSQL closed (it restarted, or a node's idle connection was cut) is
    /// only found out when it is used: outside a transaction the statement runs once more on a
    /// new connection; inside one, the error goes to the transaction, which runs again.
    func with<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        do {
            return try once(body)
        } catch let error as PostgresError where error.isConnectionLost && currentScope?.transactionOpen != true {
            currentScope?.connection = nil
            drain()
            return try once(body)
        }
    }

    private func once<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        if let scope = currentScope {
            if let connection = scope.connection {
                if connection.isUsable { return try counted(connection, body) }
                if scope.transactionOpen {
                    throw PostgresError(sqlState: "08006", message: "the connection was lost in the middle of a transaction", statement: "")
                }
            }
            let connection = try checkOut()
            scope.connection = connection
            return try counted(connection, body)
        }
        let connection = try checkOut()
        defer { checkIn(connection) }
        return try counted(connection, body)
    }

    private func counted<T>(_ connection: PostgresConnection, _ body: (PostgresConnection) throws -> T) throws -> T {
        guard let counter = Self.roundTripCounter else { return try body(connection) }
        let before = connection.roundTrips
        defer { counter.add(connection.roundTrips - before) }
        return try body(connection)
    }

    func checkOut() throws -> PostgresConnection {
        while let connection = idle.withLock({ $0.popLast() }) {
            if connection.isUsable { return connection }
        }
        let connection = try PostgresConnection(url: url)
        // No statement waits for ever: a lock held by a node that hangs, or a query stuck.
        try connection.run("SET lock_timeout = 10000; SET statement_timeout = 120000")
        return connection
    }

    func checkIn(_ connection: PostgresConnection) {
        guard connection.isUsable else { return }
        connection.discardQueued()
        if connection.inTransaction { try? connection.run("ROLLBACK") }
        idle.withLock { connections in
            if connections.count < maxIdle { connections.append(connection) }
        }
    }

    /// Closes the idle connections (the server is stopping, or PostgreSQL restarted).
    func drain() {
        idle.withLock { $0.removeAll() }
    }
}
