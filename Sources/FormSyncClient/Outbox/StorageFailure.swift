/// The outbox's database refused a read or a write: what a person needs to act on it (a full
/// disk, a damaged file), without the storage engine's own types in the API.
public struct StorageFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The storage engine's extended result code (SQLite's, for example 13 for a full disk).
    public var code: Int32
    /// The storage engine's words.
    public var message: String
    /// The statement that failed, without its bound values (a payload never reaches a log).
    public var sql: String

    /// Whether the disk was full.
    public var isDiskFull: Bool { code & 0xFF == 13 }

    public var description: String { "storage error \(code): \(message) (in: \(sql))" }

    init(code: Int32, message: String, sql: String) {
        self.code = code
        self.message = message
        self.sql = sql
    }
}
