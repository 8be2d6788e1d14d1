import Foundation

/// One item handed from one person to another on a shared phone: a person's act, kept with
/// the item (`Outbox.handovers(of:)`, `formsync outbox inspect`).
public struct Handover: Sendable, Equatable {
    /// Who owned it before (nil: nobody, an item captured before people signed in).
    public var from: String?
    /// Who owns it now: it goes out under their credential.
    public var to: String
    /// Who handed it over.
    public var by: String
    /// When, by the outbox's clock.
    public var at: Date
}
