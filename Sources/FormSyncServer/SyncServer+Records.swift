import FormSyncModel
import Foundation

/// The back office's records API (docs/PROTOCOL.md, "Records and the change feed"): seed, change
/// and delete records while devices are offline; each write reaches devices through the change
/// feed (`ChangeFeed`). The rules records are checked against are `RecordService`'s.
extension SyncServer {
    /// A record as the server holds it.
    public struct Record: Sendable, Equatable {
        public var type: String
        public var id: Int64
        public var version: Int
        /// The value of its scope field ("" for a record every device receives).
        public var scope: String
        /// Its fields' JSON.
        public var fields: Data
    }

    /// Why the back office's write was refused.
    public enum RecordError: Error, Equatable, CustomStringConvertible {
        /// The fields break the record type's rules.
        case invalid([FieldError])
        /// The fields are not a JSON object of the record type.
        case malformed(String)

        public var description: String {
            switch self {
            case .invalid(let errors):
                return "the record breaks \(errors.count) rule(s): " + errors.map { "\($0.pointer) \($0.detail)" }.joined(separator: "; ")
            case .malformed(let reason): return reason
            }
        }
    }

    // MARK: The back office

    /// Creates (`id` nil: a new id from the server's sequence) or replaces a record, as the back
    /// office does, and puts the change in the feed. Returns the record as stored. `author`: the
    /// back-office person its history names (nil: the back office, unnamed).
    @discardableResult
    public func putRecord(_ type: String, id: Int64? = nil, fields: Data, workspace: String, author: String? = nil) throws -> Record {
        defer { feedWaiters.changed(workspace: workspace) }
        return try locked {
            try store.transaction {
                try RecordService(context: context).seedRecord(
                    RecordSeed(type: type, id: id, fields: fields, workspace: workspace, author: author))
            }
        }
    }

    /// One record for `putRecords`.
    public struct RecordSeed: Sendable {
        public var type: String
        public var id: Int64?
        public var fields: Data
        public var workspace: String
        /// The back-office person the record's history names (nil: the back office, unnamed).
        public var author: String?

        public init(type: String, id: Int64? = nil, fields: Data, workspace: String, author: String? = nil) {
            self.author = author
            self.type = type
            self.id = id
            self.fields = fields
            self.workspace = workspace
        }
    }

    /// Writes several records in one transaction: all of them, or (when one is refused, which
    /// the error names by its index) none.
    public func putRecords(_ seeds: [RecordSeed]) throws {
        defer { for workspace in Set(seeds.map(\.workspace)) { feedWaiters.changed(workspace: workspace) } }
        try locked {
            try store.transaction {
                for (index, seed) in seeds.enumerated() {
                    do {
                        _ = try RecordService(context: context).seedRecord(seed)
                    } catch let error as RecordError {
                        throw RecordSeedError(index: index, type: seed.type, error: error)
                    }
                }
            }
        }
    }

    /// The largest id of a document or a record: 2^53 − 1, the largest integer every JSON reader
    /// holds exactly.
    package static let maxEntityID: Int64 = 9_007_199_254_740_991

    /// Which record of a `putRecords` batch was refused, and why; nothing of the batch was written.
    public struct RecordSeedError: Error, CustomStringConvertible {
        public var index: Int
        public var type: String
        public var error: RecordError

        public var description: String { "record \(index) (\(type.prefix(140))): \(error)" }
    }

    /// Writes a typed record (a new one when its id is 0).
    @discardableResult
    public func putRecord<R: SyncRecord>(_ record: R, workspace: String, author: String? = nil) throws -> R {
        let fields = try FormRegistry.encode(record)
        let stored = try putRecord(R.recordType, id: record.id > 0 ? record.id : nil, fields: fields, workspace: workspace, author: author)
        return try RecordProjection.decode(R.self, fields: stored.fields, id: stored.id, version: stored.version)
    }

    /// Deletes a record; devices that hold it receive the deletion. False when there was none.
    @discardableResult
    public func deleteRecord(_ type: String, id: Int64, workspace: String, author: String? = nil) throws -> Bool {
        let (writer, author) = (VersionWriter(context: context), Authorship.backOffice(author, at: context.now()))
        defer { feedWaiters.changed(workspace: workspace) }
        return try locked { try store.transaction { try writer.deleteRecord(workspace: workspace, type: type, id: id, by: author) } }
    }

    /// One record, if the server holds it.
    public func record(_ type: String, id: Int64, workspace: String) -> Record? {
        locked { (try? store.record(workspace: workspace, type: type, id: id)).flatMap { $0 }.map(Self.publicRecord) }
    }

    /// Every record of a workspace, by type and id.
    public func records(workspace: String) -> [Record] {
        locked { ((try? store.records(workspace: workspace)) ?? []).map(Self.publicRecord) }
    }

    static func publicRecord(_ stored: StoredRecord) -> Record {
        Record(type: stored.type, id: stored.id, version: stored.version, scope: stored.scope, fields: stored.payload)
    }

    /// The most changes one page of the feed returns.
    public static let maxChangesPerPage = 1000
}
