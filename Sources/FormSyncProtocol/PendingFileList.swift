/// The members of `GET /pending-files` (docs/PROTOCOL.md, "Deferred files"): the files documents
/// named by digest whose bytes have not arrived. Named here only.
public enum PendingFileList {
    /// The list, oldest first.
    public static let pending = "pending"

    /// The members of one pending file.
    public enum Entry {
        public static let documentID = "document_id"
        public static let pointer = "pointer"
        public static let digest = "digest"
        public static let byteCount = "byte_count"
        public static let contentType = "content_type"
        /// When the document first named it (RFC 3339).
        public static let since = "since"
        public static let form = "form"
        public static let id = "id"
    }
}
