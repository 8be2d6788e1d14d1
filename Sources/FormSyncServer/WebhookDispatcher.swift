import FormSyncProtocol
import Foundation
import Synchronization

/// Delivers webhooks (docs/PROTOCOL.md, "Webhooks") in passes, on a thread of its own (or the
/// caller's, for `SyncServer.deliverWebhooks`): each receiver's new events become deliveries
/// in the store's queue, then every delivery due now is claimed, posted, and its outcome
/// recorded, with a backoff, until the retry window closes and it becomes a dead letter. A
/// document's events go one at a time, in order; a node that dies mid-post leaves its claim to
/// lapse, and another node posts again (receivers drop duplicates by `FormSync-Event-ID`).
struct WebhookDispatcher: ServerPart {
    let context: ServerContext
    let sender: WebhookSender

    /// How many events one receiver's queue takes at a time, and deliveries one claim takes.
    static let batch = 200

    func pass() -> SyncServer.WebhookPass {
        var pass = SyncServer.WebhookPass()
        do {
            pass.queued = try queueNewEvents()
            // Claims until nothing is due now, a bounded number of rounds (what is left is the
            // next pass's).
            for _ in 0..<50 {
                let policy = settings.webhookPolicy
                let now = now()
                let lease = now.addingReportingOverflow(Int64(policy.timeoutSeconds * 1000) + 60_000).partialValue
                let claimed = try locked {
                    try store.transaction { try store.webhooks.claimDeliveries(now: now, leaseUntil: lease, limit: Self.batch) }
                }
                if claimed.isEmpty { break }
                let outcomes = Mutex<[DeliveryAttempt]>([])
                let lanes = DispatchSemaphore(value: max(1, policy.concurrency))
                let group = DispatchGroup()
                for delivery in claimed {
                    lanes.wait()
                    group.enter()
                    Thread.detachNewThread {
                        defer {
                            lanes.signal()
                            group.leave()
                        }
                        if let attempt = post(delivery, policy: policy) { outcomes.withLock { $0.append(attempt) } }
                    }
                }
                group.wait()
                for attempt in outcomes.withLock({ $0 }) {
                    pass.attempted += 1
                    if attempt.state == .delivered { pass.delivered += 1 }
                    if attempt.state == .dead { pass.dead += 1 }
                }
            }
        } catch {
            FileHandle.standardError.write(Data("formsync server: webhook delivery: \(error)\n".utf8))
        }
        return pass
    }

    /// Queues each receiver's events since its cursor, one receiver at a time (its row held,
    /// so two nodes never queue the same receiver's events together).
    private func queueNewEvents() throws -> Int {
        var queued = 0
        // A receiver whose cursor is at the feed's end has nothing to queue: no transaction for it.
        let (webhooks, end) = try locked { (try store.webhooks.webhooks(workspace: nil), try store.history.lastSubmissionEvent()) }
        for webhook in webhooks where webhook.cursor < end {
            while true {
                let added = try locked {
                    try store.transaction { () throws -> (events: Int, queued: Int) in
                        guard let current = try store.webhooks.webhook(webhook.id, workspace: nil, locked: true) else { return (0, 0) }
                        let events = try store.history.submissionEvents(
                            workspace: current.workspace, after: current.cursor, form: nil, since: nil, until: nil, limit: Self.batch)
                        guard let last = events.last else { return (0, 0) }
                        let wanted = events.filter(current.wants)
                        try store.webhooks.addDeliveries(webhook: current.id, events: wanted, cursor: last.seq, at: now())
                        return (events.count, wanted.count)
                    }
                }
                queued += added.queued
                if added.events < Self.batch { break }
            }
        }
        return queued
    }

    /// Posts one claimed delivery and records what came of it; nil when its receiver or its
    /// event is gone (the delivery went with them).
    private func post(_ delivery: StoredDelivery, policy: SyncServer.WebhookPolicy) -> DeliveryAttempt? {
        do {
            let prepared = try locked { () throws -> (webhook: StoredWebhook, body: Data)? in
                guard let webhook = try store.webhooks.webhook(delivery.webhookID, workspace: nil, locked: false),
                    let event = try store.history.documentEvent(id: delivery.eventID)
                else { return nil }
                return (webhook, try SubmissionFeed(context: context).json(event))
            }
            guard let (webhook, body) = prepared, let url = URL(string: webhook.url) else { return nil }
            let sentAt = now()
            var secrets = [webhook.secret]
            if let previous = webhook.previousSecret, let until = webhook.previousUntil, sentAt < until { secrets.append(previous) }
            let headers = [
                "Content-Type": "application/json", "User-Agent": "FormSync-Webhooks/1",
                ProtocolHeader.eventID: String(delivery.eventID), ProtocolHeader.event: delivery.event.rawValue,
                ProtocolHeader.webhook: String(webhook.id),
                ProtocolHeader.signature: WebhookSignature.header(body: body, timestamp: sentAt / 1000, secrets: secrets),
            ]
            let reply = sender.post(url, body: body, headers: headers, deadline: policy.timeoutSeconds)
            let attempt = Self.outcome(delivery, reply, policy: policy, now: now())
            try locked { try store.transaction { try store.webhooks.finishDelivery(delivery.id, attempt) } }
            return attempt
        } catch {
            FileHandle.standardError.write(Data("formsync server: webhook delivery \(delivery.id): \(error)\n".utf8))
            return nil
        }
    }

    /// What a reply makes of a delivery: delivered on a 2xx; otherwise tried again after a
    /// backoff with jitter (no sooner than a sane `Retry-After` asks), or dead once the retry
    /// window since its first attempt has closed.
    static func outcome(
        _ delivery: StoredDelivery, _ reply: WebhookSender.Reply, policy: SyncServer.WebhookPolicy, now: Int64
    )
        -> DeliveryAttempt
    {
        if let status = reply.status, (200..<300).contains(status) {
            return DeliveryAttempt(state: .delivered, status: status, error: nil, nextAttemptAt: now, at: now)
        }
        let error: String
        switch reply.status {
        case .some(let status) where (300..<400).contains(status):
            error = "the receiver redirected (HTTP \(status)); a delivery never follows a redirect"
        case .some(let status): error = "HTTP \(status)"
        case nil: error = String((reply.error ?? "no reply").prefix(300))
        }
        // Seconds as the policy says them, within a century for the window and a year for a
        // wait: no setting makes the arithmetic trap or wrap.
        let year: Int64 = 366 * 24 * 3600
        let window = min(max(0, policy.retryWindowSeconds), 100 * year) * 1000
        let first = delivery.firstAttemptAt ?? now
        if now.subtractingReportingOverflow(first).partialValue >= window {
            return DeliveryAttempt(state: .dead, status: reply.status, error: error, nextAttemptAt: now, at: now)
        }
        let attempts = delivery.attempts + 1
        let ceiling = min(max(1, policy.maxDelaySeconds), year) * 1000
        let base = min(ceiling, min(max(1, policy.firstDelaySeconds), year) * 1000 << Int64(min(max(attempts - 1, 0), 20)))
        var delay = base / 2 + Int64(jitter(delivery.id, attempts) % UInt64(base / 2 + 1))
        if let asked = reply.retryAfter, (1...3600).contains(asked) { delay = max(delay, asked * 1000) }
        return DeliveryAttempt(
            state: .pending, status: reply.status, error: error, nextAttemptAt: delay > Int64.max - now ? Int64.max : now + delay, at: now)
    }

    /// A number that looks random but is the same for the same delivery and attempt (SplitMix64),
    /// so that two nodes agree and a test can replay a schedule.
    static func jitter(_ id: Int64, _ attempt: Int) -> UInt64 {
        var z = UInt64(bitPattern: id) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(attempt)
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
