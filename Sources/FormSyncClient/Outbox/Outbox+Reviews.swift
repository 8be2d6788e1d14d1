import FormSyncProtocol
import Foundation

extension Outbox {
    // MARK: Reviews

    /// The back office's reviews of a document this device sent, oldest first, as the current
    /// person's pulls brought them (`Review`: the verdict, the reviewer's comment and the fields
    /// at fault). A document that has issues is reopened by the pull that brings the review:
    /// its item is `rejected`, with the issues as field errors, for its person to fix and
    /// `resubmit` as the document's next version.
    public func reviews(of documentID: String) throws -> [Review] {
        let views = [PersonalView(workspace: workspace, principal: lifecycle.principal).key]
        return try storage { try store.reviews(documentID: documentID, views: views) }
    }

    /// Acts on the reviews pulls kept and nothing acted on yet (the pull that brought them, or
    /// the next pull when the process died between the two), and tells of each.
    func applyWaitingReviews() throws {
        // Most pulls bring none: nothing is written (and nothing flushed) for them.
        guard try storage({ try !store.waitingReviews().isEmpty }) else { return }
        let now = environment.now()
        let outcomes = try write(.full) { try lifecycle.applyWaitingReviews(now: now) }
        for outcome in outcomes {
            observers.emit(.reviewed(item: outcome.item, review: outcome.review, reopened: outcome.reopened))
        }
        if outcomes.contains(where: \.reopened) { emitSnapshot(changed: nil) }
    }
}
