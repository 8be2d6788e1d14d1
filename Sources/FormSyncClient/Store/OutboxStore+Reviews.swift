import FormSyncProtocol
import FormSyncSQLite
import Foundation

/// The back office's reviews of this device's documents (`reviews`): kept with the page that
/// brought them, acted on once.
extension OutboxStore {
    /// A review as kept: where it came from and whether it was acted on.
    struct KeptReview {
        var view: String
        var review: Review
        var appliedAt: Int64?
        var itemID: Int64?
    }

    /// Keeps `reviews` for `view`; one kept before (a reset feed sends it again) is left as it is.
    func addReviews(_ reviews: [Review], view: String, at now: Int64) throws {
        let encoder = JSONEncoder()
        for review in reviews {
            try db.run(
                "INSERT OR IGNORE INTO reviews (view, id, document_id, body, received_at) VALUES (?, ?, ?, ?, ?)",
                [.text(view), .integer(review.id), .text(review.documentID), .blob(try encoder.encode(review)), .integer(now)])
        }
    }

    private static func kept(_ row: SQLiteConnection.Row) -> KeptReview? {
        guard let body = row.blob(1), let review = try? JSONDecoder().decode(Review.self, from: body) else { return nil }
        return KeptReview(view: row.text(0) ?? "", review: review, appliedAt: row.optionalInt(2), itemID: row.optionalInt(3))
    }

    /// Reviews not acted on yet, oldest first.
    func waitingReviews() throws -> [KeptReview] {
        try db.query("SELECT view, body, applied_at, item_id FROM reviews WHERE applied_at IS NULL ORDER BY received_at, id", [], Self.kept)
            .compactMap { $0 }
    }

    /// Marks a review acted on, and the item it reopened.
    func markReviewApplied(view: String, id: Int64, item: Int64?, at now: Int64) throws {
        try db.run(
            "UPDATE reviews SET applied_at = ?, item_id = ? WHERE view = ? AND id = ?",
            [.integer(now), item.map(SQLValue.integer) ?? .null, .text(view), .integer(id)])
    }

    /// The reviews of one document, oldest first.
    func reviews(documentID: String, views: [String]) throws -> [Review] {
        try db.query(
            "SELECT view, body, applied_at, item_id FROM reviews WHERE document_id = ? ORDER BY id", [.text(documentID)], Self.kept
        ).compactMap { $0 }.filter { views.contains($0.view) }.map(\.review)
    }

    /// Forgets a view's reviews (a purge).
    func clearReviews(view: String) throws {
        try db.run("DELETE FROM reviews WHERE view = ?", [.text(view)])
    }

    /// The latest submission item of `documentID` in `workspace`.
    func latestSubmission(documentID: String, workspace: String) throws -> Row? {
        try db.query(
            "SELECT \(Self.columns) FROM items WHERE workspace = ? AND document_id = ? AND kind = 'submission' ORDER BY id DESC LIMIT 1",
            [.text(workspace), .text(documentID)], Self.row
        ).first
    }
}
