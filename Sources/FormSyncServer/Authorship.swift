import FormSyncProtocol
import Foundation

/// Who made a version, when and through what, as the store keeps it (`ChangeAuthor` on the
/// wire): every write of a document or a record carries one.
package struct Authorship: Sendable, Equatable {
    /// Nil: the server itself, or the back office's API without a credential.
    package var principal: String?
    package var device: String?
    /// The server's clock, in milliseconds since 1970.
    package var at: Int64
    /// The device's capture time as it told it (`FormSync-Captured-At`), in milliseconds.
    package var capturedAt: Int64?
    package var via: ChangeAuthor.Via
    /// The submission's document, or the file document that completed a version.
    package var documentID: String?

    package init(principal: String?, device: String?, at: Int64, capturedAt: Int64?, via: ChangeAuthor.Via, documentID: String?) {
        self.principal = principal
        self.device = device
        self.at = at
        self.capturedAt = capturedAt
        self.via = via
        self.documentID = documentID
    }

    /// A write of the back office's API, by `principal` (nil: unnamed).
    static func backOffice(_ principal: String?, at now: Int64) -> Authorship {
        Authorship(principal: principal, device: nil, at: now, capturedAt: nil, via: .backOffice, documentID: nil)
    }

    /// How the wire says it.
    var wire: ChangeAuthor {
        ChangeAuthor(
            principal: principal, deviceID: device, at: WireSyntax.timestamp(at), capturedAt: capturedAt.map(WireSyntax.timestamp),
            via: via,
            documentID: documentID)
    }
}
