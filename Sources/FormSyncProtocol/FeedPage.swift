/// The members of a page of the change feed (`GET /changes`, docs/PROTOCOL.md, "Records and the
/// change feed"): the server writes them, the device's feed reader and `formsync conformance`
/// read them, and they are named here only.
public enum FeedPage {
    /// The changes, in commit order.
    public static let changes = "changes"
    /// Where the next page begins.
    public static let cursor = "cursor"
    /// Whether more changes follow now.
    public static let more = "more"
    /// With `more`: how many changes follow this page now (counted up to 1,000,000), so that a
    /// device can show its progress through a long first pull.
    public static let remaining = "remaining"
    /// A support request open for the calling device (`SupportRequest`: its `id` and `reason`),
    /// absent when there is none: the device answers it with a support bundle.
    public static let supportRequest = "support_request"
    /// The back office's reviews of the calling principal's documents made since the cursor
    /// (`Review`s, oldest first), absent when there are none: the device shows each, and
    /// reopens a document that "has issues" for its person to fix.
    public static let reviews = "reviews"

    /// The members of one change.
    public enum Change {
        public static let id = "id"
        public static let type = "type"
        public static let version = "version"
        public static let record = "record"
        /// `true` for a removal from the caller's scope.
        public static let deleted = "deleted"
        /// `true`, in a subscription's page: the record changed and no longer matches the
        /// subscription (it is not deleted: another subscription may still hold it).
        public static let outside = "outside"
    }
}
