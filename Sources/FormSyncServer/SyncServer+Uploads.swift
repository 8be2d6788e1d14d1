/// The bounds of resumable uploads (docs/PROTOCOL.md, "Resumable uploads"; the routes are
/// `UploadService`).
extension SyncServer {
    /// The largest file a resumable upload may announce.
    public static let maxUploadBytes: Int64 = 4 << 30

    /// Bounds on resumable uploads (docs/PROTOCOL.md, "Resumable uploads"): how many unfinished
    /// uploads, and how many bytes they announce, one principal and one workspace may hold, and
    /// how long an upload nobody appends to is kept.
    public struct UploadLimits: Sendable {
        public var maxUnfinishedPerPrincipal = 16
        public var maxUnfinishedBytesPerPrincipal: Int64 = 16 << 30
        public var maxUnfinishedBytesPerWorkspace: Int64 = 256 << 30
        /// An unfinished upload with no append for this long is deleted (24 hours).
        public var expiryMilliseconds: Int64 = 86_400_000

        public init() {}
    }
}
