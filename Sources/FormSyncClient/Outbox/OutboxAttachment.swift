import Foundation

extension Outbox {
    /// What an attachment transform is given: the file the app attached, its declared media
    /// type, and a scratch path (in the outbox's stash folder, removed afterwards) it may write
    /// a new file to. It returns the file to stash (the source, or the scratch file) and its
    /// media type. A throw refuses the enqueue (`OutboxError.stashFailed`), storing nothing.
    public typealias AttachmentTransform =
        @Sendable (_ source: URL, _ contentType: String?, _ scratch: URL) throws -> (file: URL, contentType: String?)

    /// A file to upload with a submission: the placeholder id the payload uses for it and where
    /// the file is now (it is copied into the outbox's stash at enqueue).
    public struct Attachment: Sendable {
        public var placeholder: Int64
        public var source: URL
        public var contentType: String?

        public init(placeholder: Int64, source: URL, contentType: String? = nil) {
            self.placeholder = placeholder
            self.source = source
            self.contentType = contentType
        }
    }
}
