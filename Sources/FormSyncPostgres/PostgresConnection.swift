import CLibPQ
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One connection to a PostgreSQL server through libpq: parameterised statements, typed values
/// in and out, and every failure as a `PostgresError` with its SQLSTATE. Used by one thread at
/// a time (the store's pool hands it out); not safe to share between threads at once.
package final class PostgresConnection: @unchecked Sendable {
    private let connection: OpaquePointer
    /// Statements prepared on this connection, by their text: each is parsed and planned once,
    /// then only executed (a write runs about a dozen of them).
    private var prepared: [String: String] = [:]
    /// At most this many are kept; past it, statements run unprepared.
    static let maxPrepared = 256
    /// Statements whose answers nothing reads, sent with the next statement that needs one.
    private var queued: [(sql: String, parameters: [PostgresValue])] = []
    /// A pipeline ended out of step: the connection is dropped rather than used again.
    private var broken = false
    /// The times this connection sent something and waited for the server's answer (a
    /// statement, a pipeline, a statement's preparation): what a write's latency is made of.
    package private(set) var roundTrips = 0

    /// Connects to `url` (`postgres://user@host:port/database?…`, or libpq's `key=value` form),
    /// giving up after `timeoutSeconds`.
    package init(url: String, timeoutSeconds: Int = 10) throws {
        let keys = ["dbname", "connect_timeout", "application_name", "client_encoding"]
        let values = [url, String(max(2, min(timeoutSeconds, 3600))), "formsync", "UTF8"]
        let keyPointers = keys.map { strdup($0) } + [nil]
        let valuePointers = values.map { strdup($0) } + [nil]
        defer {
            for pointer in keyPointers { free(pointer) }
            for pointer in valuePointers { free(pointer) }
        }
        let made: OpaquePointer? = keyPointers.map { UnsafePointer($0) }.withUnsafeBufferPointer { keyBuffer in
            valuePointers.map { UnsafePointer($0) }.withUnsafeBufferPointer { valueBuffer in
                PQconnectdbParams(keyBuffer.baseAddress, valueBuffer.baseAddress, 1)
            }
        }
        guard let made else { throw PostgresError(sqlState: nil, message: "out of memory", statement: "connect") }
        guard PQstatus(made) == CONNECTION_OK else {
            let message = Self.trimmed(PQerrorMessage(made))
            PQfinish(made)
            throw PostgresError(sqlState: "08001", message: "cannot connect to \(Self.redacted(url)): \(message)", statement: "connect")
        }
        connection = made
        // Notices (e.g. "there is no transaction in progress") go nowhere rather than to stderr.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    deinit { PQfinish(connection) }

    /// Whether the connection still works (false once the server closed it or died).
    package var isUsable: Bool { !broken && PQstatus(connection) == CONNECTION_OK }

    /// Whether a transaction is open on it (or failed and not yet rolled back).
    package var inTransaction: Bool {
        let status = PQtransactionStatus(connection)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// The payloads of the notifications that arrived on the channels this connection
    /// `LISTEN`s to, waiting up to `seconds` for the first (none when none came). Throws when
    /// the connection broke.
    package func notifications(waitingUpTo seconds: Double) throws -> [String] {
        var found = drainNotifications()
        if !found.isEmpty { return found }
        let socket = PQsocket(connection)
        guard socket >= 0 else { throw PostgresError(sqlState: "08006", message: "the connection is closed", statement: "LISTEN") }
        var watched = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = poll(&watched, 1, Int32(max(0, min(seconds, 60)) * 1000))
        guard ready > 0 else { return [] }
        guard PQconsumeInput(connection) == 1 else {
            throw PostgresError(sqlState: "08006", message: Self.trimmed(PQerrorMessage(connection)), statement: "LISTEN")
        }
        found = drainNotifications()
        return found
    }

    private func drainNotifications() -> [String] {
        var found: [String] = []
        while let notice = PQnotifies(connection) {
            found.append(String(cString: notice.pointee.extra))
            PQfreemem(notice)
        }
        return found
    }

    /// Runs one or more statements without parameters (migrations, `BEGIN`, `COMMIT`). A single
    /// statement goes in the same round trip as the statements queued by `later`; `ROLLBACK`
    /// forgets them instead.
    package func run(_ sql: String) throws {
        if sql == "ROLLBACK" { queued = [] }
        if !queued.isEmpty {
            if !sql.contains(";") {
                _ = try queryEach([(sql, [])])
                return
            }
            _ = try queryEach([])
        }
        roundTrips += 1
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        try check(result, sql)
    }

    /// Runs one statement with `parameters` (`$1`, `$2`, …) and returns its rows.
    @discardableResult
    package func query(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresRows {
        if !queued.isEmpty { return try queryEach([(sql, parameters)])[0] }
        let (types, buffers, formats) = try Self.encoded(parameters, sql)
        let lengths = buffers.map { Int32($0?.count ?? 0) }
        let name = try preparedName(sql, types)
        roundTrips += 1
        let result: OpaquePointer? = Self.withPointers(buffers) { pointers in
            if let name { return PQexecPrepared(connection, name, Int32(parameters.count), pointers, lengths, formats, 1) }
            return PQexecParams(connection, sql, Int32(parameters.count), types, pointers, lengths, formats, 1)
        }
        guard let result else { throw PostgresError(sqlState: nil, message: Self.trimmed(PQerrorMessage(connection)), statement: sql) }
        do {
            try check(result, sql)
        } catch {
            PQclear(result)
            throw error
        }
        return PostgresRows(result)
    }

    /// Queues a statement whose answer nothing reads (a `SET LOCAL`, the last write before
    /// `COMMIT`): it is sent with the next statement that needs an answer, in one round trip
    /// (libpq's pipeline mode), and an error it raises is thrown by that statement. Inside a
    /// transaction only, so that such an error fails the transaction it belongs to.
    package func later(_ sql: String, _ parameters: [PostgresValue] = []) {
        queued.append((sql, parameters))
    }

    /// Forgets the statements `later` queued and that were not sent (the connection goes back
    /// to its pool).
    package func discardQueued() {
        queued = []
    }

    /// Runs `statements` after the ones `later` queued, all in one round trip (libpq's pipeline
    /// mode), and returns each one's rows in order: reads that need no answer of each other
    /// cost one wait for the server instead of one each. Each statement still sees what the
    /// ones before it did. The first error of any of them is thrown (the ones after it were not
    /// run).
    package func queryEach(_ statements: [(sql: String, parameters: [PostgresValue])]) throws -> [PostgresRows] {
        var batch = queued
        queued = []
        let firstAnswer = batch.count
        batch += statements
        guard !batch.isEmpty else { return [] }
        var sends: [(types: [UInt32], buffers: [Data?], formats: [Int32], name: String?)] = []
        for statement in batch {
            let (types, buffers, formats) = try Self.encoded(statement.parameters, statement.sql)
            // (Prepared before the pipeline begins: preparing is a round trip of its own, once; a
            // statement with no parameters too, so that its parse and plan are not paid each
            // time. A text of several statements cannot be prepared, nor sent this way.)
            let name = statement.sql.contains(";") ? nil : try preparedName(statement.sql, types)
            sends.append((types, buffers, formats, name))
        }
        guard PQenterPipelineMode(connection) == 1 else {
            throw PostgresError(sqlState: "08006", message: Self.trimmed(PQerrorMessage(connection)), statement: batch[0].sql)
        }
        var failure: PostgresError?
        var answers: [OpaquePointer] = []
        defer {
            if PQexitPipelineMode(connection) != 1 { broken = true }
        }
        for (index, statement) in batch.enumerated() {
            let send = sends[index]
            let lengths = send.buffers.map { Int32($0?.count ?? 0) }
            let sent = Self.withPointers(send.buffers) { pointers in
                if let name = send.name {
                    return PQsendQueryPrepared(connection, name, Int32(statement.parameters.count), pointers, lengths, send.formats, 1)
                }
                return PQsendQueryParams(
                    connection, statement.sql, Int32(statement.parameters.count), send.types, pointers, lengths, send.formats, 1)
            }
            guard sent == 1 else {
                broken = true
                throw PostgresError(sqlState: "08006", message: Self.trimmed(PQerrorMessage(connection)), statement: statement.sql)
            }
        }
        roundTrips += 1
        guard PQpipelineSync(connection) == 1 else {
            broken = true
            throw PostgresError(sqlState: "08006", message: Self.trimmed(PQerrorMessage(connection)), statement: batch[0].sql)
        }
        for (index, statement) in batch.enumerated() {
            guard let result = PQgetResult(connection) else {
                broken = true
                throw failure
                    ?? PostgresError(sqlState: "08006", message: Self.trimmed(PQerrorMessage(connection)), statement: statement.sql)
            }
            let status = PQresultStatus(result)
            if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK {
                if failure == nil { failure = Self.rolledBack(result, statement.sql) }
                if index >= firstAnswer { answers.append(result) } else { PQclear(result) }
            } else {
                if status != PGRES_PIPELINE_ABORTED, failure == nil {
                    do { try check(result, statement.sql) } catch let error as PostgresError { failure = error }
                }
                PQclear(result)
            }
            // The end of this statement's results.
            while let extra = PQgetResult(connection) { PQclear(extra) }
        }
        let sync = PQgetResult(connection)
        if PQresultStatus(sync) != PGRES_PIPELINE_SYNC { broken = true }
        PQclear(sync)
        let rows = answers.map(PostgresRows.init)
        if let failure { throw failure }
        return rows
    }

    /// The statement's name on this connection, prepared now if it was not (nil once
    /// `maxPrepared` are: it then runs unprepared).
    private func preparedName(_ sql: String, _ types: [UInt32]) throws -> String? {
        if let name = prepared[sql] { return name }
        guard prepared.count < Self.maxPrepared else { return nil }
        let candidate = "s\(prepared.count)"
        roundTrips += 1
        let made = PQprepare(connection, candidate, sql, Int32(types.count), types)
        defer { PQclear(made) }
        guard PQresultStatus(made) == PGRES_COMMAND_OK else {
            try check(made, sql)
            return nil
        }
        prepared[sql] = candidate
        return candidate
    }

    /// Parameters as libpq takes them: type oids, bytes, and formats (text or binary).
    private static func encoded(_ parameters: [PostgresValue], _ sql: String) throws -> ([UInt32], [Data?], [Int32]) {
        guard parameters.count <= Int(Int16.max) else {
            throw PostgresError(sqlState: "54023", message: "too many parameters (\(parameters.count))", statement: sql)
        }
        var types: [UInt32] = []
        var buffers: [Data?] = []
        var formats: [Int32] = []
        for parameter in parameters {
            switch parameter {
            case .null:
                types.append(0)
                buffers.append(nil)
                formats.append(0)
            case .text(let text):
                types.append(25)
                buffers.append(Data(text.utf8) + [0])
                formats.append(0)
            case .integer(let value):
                types.append(20)
                buffers.append(withUnsafeBytes(of: value.bigEndian) { Data($0) })
                formats.append(1)
            case .bytes(let data):
                guard data.count < Int(Int32.max) else {
                    throw PostgresError(sqlState: "54000", message: "a value of \(data.count) bytes is too large", statement: sql)
                }
                types.append(17)
                buffers.append(data)
                formats.append(1)
            }
        }
        return (types, buffers, formats)
    }

    private func check(_ result: OpaquePointer?, _ sql: String) throws {
        guard let result else { throw PostgresError(sqlState: nil, message: Self.trimmed(PQerrorMessage(connection)), statement: sql) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = PQresultErrorMessage(result).map { Self.trimmed($0) } ?? "unknown error"
            throw PostgresError(
                sqlState: state ?? (isUsable ? nil : "08006"),
                message: message.isEmpty ? Self.trimmed(PQerrorMessage(connection)) : message, statement: sql)
        }
        if let rolledBack = Self.rolledBack(result, sql) { throw rolledBack }
    }

    /// A `COMMIT` that PostgreSQL answered `ROLLBACK`: a statement of its transaction failed
    /// earlier and whoever ran it did not stop there. Nothing of it was kept, so it is an error
    /// (one worth running the transaction again for), never a silent success.
    private static func rolledBack(_ result: OpaquePointer, _ sql: String) -> PostgresError? {
        guard sql == "COMMIT", let tag = PQcmdStatus(result), String(cString: tag) == "ROLLBACK" else { return nil }
        return PostgresError(
            sqlState: "40000", message: "the transaction was rolled back at its COMMIT: a statement in it had failed", statement: sql)
    }

    private static func withPointers<R>(_ buffers: [Data?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafePointer<CChar>?] = []
        var copies: [UnsafeMutableRawPointer] = []
        defer { for copy in copies { free(copy) } }
        for buffer in buffers {
            guard let buffer else {
                pointers.append(nil)
                continue
            }
            let copy = malloc(max(1, buffer.count))!
            buffer.copyBytes(to: copy.assumingMemoryBound(to: UInt8.self), count: buffer.count)
            copies.append(copy)
            pointers.append(UnsafePointer(copy.assumingMemoryBound(to: CChar.self)))
        }
        return body(pointers)
    }

    static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "" }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `url` without its password, for messages and logs.
    package static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else {
            return url.contains("password=") ? "(a connection string)" : url
        }
        components.password = "***"
        return components.string ?? "(a connection string)"
    }
}

/// A value passed to or read from PostgreSQL.
package enum PostgresValue: Sendable, Equatable {
    case null
    case text(String)
    case integer(Int64)
    case bytes(Data)
}

/// A failed PostgreSQL call: its SQLSTATE (`23505` unique violation, `40001` serialization
/// failure, `08…` connection trouble) and the server's message.
package struct PostgresError: Error, CustomStringConvertible, Sendable {
    package var sqlState: String?
    package var message: String
    package var statement: String

    package var description: String {
        "PostgreSQL\(sqlState.map { " \($0)" } ?? ""): \(message) (in: \(statement.prefix(80)))"
    }

    /// The connection is gone (the server restarted or the network broke): retry on a new one.
    package var isConnectionLost: Bool {
        sqlState?.hasPrefix("08") ?? true || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03"
    }
    /// Another transaction won a race (`40001`, `40P01`), or a failure in it went unseen until a
    /// later statement (`25P02`) or its `COMMIT` (`40000`): run the whole transaction again.
    package var isRetryable: Bool { ["40001", "40P01", "40000", "25P02"].contains(sqlState) }
    /// A unique constraint was broken (`23505`).
    package var isUniqueViolation: Bool { sqlState == "23505" }
    /// A lock was not granted in time (`55P03`).
    package var isLockTimeout: Bool { sqlState == "55P03" }
}

/// The rows of one result, read by column index. Owns the libpq result.
package final class PostgresRows: @unchecked Sendable {
    private let result: OpaquePointer

    init(_ result: OpaquePointer) { self.result = result }
    deinit { PQclear(result) }

    package var count: Int { Int(PQntuples(result)) }
    /// Rows a command changed (`UPDATE`, `DELETE`, `INSERT`).
    package var affected: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    package func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(result, Int32(row), Int32(column)) == 1 }

    package func bytes(_ row: Int, _ column: Int) -> Data? {
        guard !isNull(row, column), let value = PQgetvalue(result, Int32(row), Int32(column)) else { return nil }
        return Data(bytes: value, count: Int(PQgetlength(result, Int32(row), Int32(column))))
    }

    package func text(_ row: Int, _ column: Int) -> String? {
        bytes(row, column).map { String(decoding: $0, as: UTF8.self) }
    }

    /// An integer column (`bigint`, `integer`, `smallint`, `boolean`) in binary form.
    package func int(_ row: Int, _ column: Int) -> Int64? {
        guard let data = bytes(row, column) else { return nil }
        var value: Int64 = 0
        for byte in data.prefix(8) { value = value << 8 | Int64(byte) }
        switch data.count {
        case 8: return value
        case 4: return Int64(Int32(truncatingIfNeeded: value))
        case 2: return Int64(Int16(truncatingIfNeeded: value))
        case 1: return value
        default: return nil
        }
    }
}
