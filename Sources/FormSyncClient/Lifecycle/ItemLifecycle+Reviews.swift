import FormSyncModel
import FormSyncProtocol
import Foundation

extension ItemLifecycle {
    /// What acting on one review did.
    struct ReviewOutcome {
        var review: Review
        /// The item that sent the document, when this device holds it.
        var item: ItemID?
        /// Whether the item was reopened for its person to fix.
        var reopened: Bool
    }

    /// The code of a field error that a reviewer's issue became.
    static let reviewErrorCode = "review"

    /// Acts, inside the caller's transaction, on every review kept and not acted on yet. A
    /// document that "has issues" reopens the item that sent it when that item landed and this
    /// device still holds it: parked as rejected, the reviewer's words as its reason and the
    /// issues as its field errors, the reviewed version as the base its fix edits (`If-Match`),
    /// and a new attempt identity. Any other review, or one whose item is gone or busy, is only
    /// told (`SyncEvent.reviewed`).
    func applyWaitingReviews(now: Int64) throws -> [ReviewOutcome] {
        var outcomes: [ReviewOutcome] = []
        for kept in try store.waitingReviews() {
            let view = PersonalView(key: kept.view)
            let review = kept.review
            var outcome = ReviewOutcome(review: review, item: nil, reopened: false)
            if var row = try store.latestSubmission(documentID: review.documentID, workspace: view.workspace),
                row.principal == nil || row.principal == view.principal
            {
                outcome.item = ItemID(row.id)
                // A form that edits a record makes a document per edit: its fix is a new edit,
                // not a new version of that document.
                let editsARecord = row.form.flatMap { registry[$0]?.recordAction?.kind } == .edits
                if review.verdict == .hasIssues, row.state == .confirmed, !editsARecord, row.payload != nil {
                    try reopenForReview(&row, review, now: now)
                    outcome.reopened = true
                }
            }
            try store.markReviewApplied(view: kept.view, id: review.id, item: outcome.item.map { $0.rawValue }, at: now)
            outcomes.append(outcome)
        }
        return outcomes
    }

    private func reopenForReview(_ row: inout OutboxStore.Row, _ review: Review, now: Int64) throws {
        let comment = review.comment.isEmpty ? "" : ": \(review.comment.prefix(500))"
        let reason = "sent back by \(review.reviewer.isEmpty ? "the back office" : review.reviewer)\(comment)"
        let issues = review.issues.map { FieldError(pointer: $0.pointer, code: Self.reviewErrorCode, detail: $0.detail) }
        row.basePayload = row.payload
        row.baseVersion = "\"\(review.version)\""
        row.attemptID = environment.newID()
        row.attempts = 0
        row.lastError = reason
        row.fieldErrors = issues.isEmpty ? nil : try FormRegistry.encode(issues)
        row.leaseExpiresAt = nil
        move(&row, to: .rejected)
        try store.update(row, now: now)
        try store.refreshLane(workspace: row.workspace, lane: row.lane)
        observers.emit(.parked(item: ItemID(row.id), state: .rejected, reason: reason))
    }
}
