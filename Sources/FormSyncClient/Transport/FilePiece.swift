import Foundation

/// One piece of a stored file, as the transport fetched it (`GET /files/<id>` with a range).
public enum FilePiece: Sendable, Equatable {
    /// `bytes` from the offset asked for, of a file of `total` bytes whose SHA-256 is `sha256`.
    case piece(bytes: Data, total: Int64, sha256: Data, contentType: String?)
    /// The server holds no such file in this workspace.
    case missing
    /// No piece now: no server answered, or it asked to come back (`retryAfter`).
    case failed(reason: String, retryAfter: Duration?)
}
