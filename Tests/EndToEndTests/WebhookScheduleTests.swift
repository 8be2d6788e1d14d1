import FormSyncProtocol
import Testing

@testable import FormSyncServer

/// What a receiver's reply makes of a delivery (`WebhookDispatcher.outcome`): a `Retry-After` is
/// the receiver's word and an absurd one is not obeyed; no policy setting, however large, makes
/// the schedule's arithmetic trap; a closed retry window is a dead letter.
struct WebhookScheduleTests {
    static func delivery(attempts: Int, firstAttemptAt: Int64? = 0) -> StoredDelivery {
        StoredDelivery(
            id: 9, webhookID: 1, eventID: 3, seq: 3, documentID: "d-1", event: .accepted, state: .pending, attempts: attempts,
            firstAttemptAt: firstAttemptAt, lastAttemptAt: nil, nextAttemptAt: 0, lastStatus: nil, lastError: nil, deliveredAt: nil)
    }

    @Test func anAbsurdRetryAfterOrPolicyNeitherTrapsNorPutsTheNextAttemptPastTheCeiling() {
        let policy = SyncServer.WebhookPolicy()
        for asked: Int64 in [0, -5, 3601, 9_999_999_999, Int64.max] {
            let next = WebhookDispatcher.outcome(
                Self.delivery(attempts: 2), WebhookSender.Reply(status: 503, retryAfter: asked, error: nil), policy: policy, now: 1000)
            #expect(next.state == .pending && next.nextAttemptAt - 1000 <= policy.maxDelaySeconds * 1000, "Retry-After \(asked)")
        }
        let honoured = WebhookDispatcher.outcome(
            Self.delivery(attempts: 0), WebhookSender.Reply(status: 429, retryAfter: 600, error: nil), policy: policy, now: 1000)
        #expect(honoured.nextAttemptAt - 1000 >= 600_000)
        var huge = SyncServer.WebhookPolicy()
        (huge.firstDelaySeconds, huge.maxDelaySeconds, huge.retryWindowSeconds) = (.max, .max, .max)
        for attempts in [0, 1, 30, Int.max - 1] {
            let next = WebhookDispatcher.outcome(
                Self.delivery(attempts: attempts, firstAttemptAt: Int64.max - 20),
                WebhookSender.Reply(status: nil, retryAfter: nil, error: "down"),
                policy: huge, now: Int64.max - 10)
            #expect(next.state == .pending && next.nextAttemptAt >= Int64.max - 10, "attempts \(attempts)")
        }
        var none = SyncServer.WebhookPolicy()
        none.retryWindowSeconds = 0
        let dead = WebhookDispatcher.outcome(
            Self.delivery(attempts: 1), WebhookSender.Reply(status: 500, retryAfter: nil, error: nil), policy: none, now: 5)
        #expect(dead.state == .dead && dead.status == 500)
        let redirected = WebhookDispatcher.outcome(
            Self.delivery(attempts: 1), WebhookSender.Reply(status: 307, retryAfter: nil, error: nil), policy: policy, now: 5)
        #expect(redirected.state == .pending && redirected.error?.contains("never follows a redirect") == true)
    }
}
