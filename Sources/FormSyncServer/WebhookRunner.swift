import Foundation
import Synchronization

/// A server's webhook deliveries (docs/PROTOCOL.md, "Webhooks"), `SyncServer.webhooks`:
/// `formsync serve` delivers on a thread of their own (`start`); tests and the lab run one pass
/// at a time on a clock they move (`deliver`).
public final class WebhookRunner: Sendable {
    let context: ServerContext
    let sender = WebhookSender()
    private let loop = Mutex<Loop?>(nil)

    init(context: ServerContext) {
        self.context = context
    }

    /// How deliveries are retried and signed; safe to change while the server serves.
    public var policy: SyncServer.WebhookPolicy {
        get { context.settings.webhookPolicy }
        set { context.settings.webhookPolicy = newValue }
    }

    /// One delivery pass now, on the caller's thread (it blocks: never call it from a task of
    /// Swift's cooperative pool): new events queued, every delivery due by the server's clock
    /// posted, outcomes recorded.
    @discardableResult
    public func deliver() -> SyncServer.WebhookPass {
        WebhookDispatcher(context: context, sender: sender).pass()
    }

    /// Delivers in the background, a pass every `interval` seconds (at least 0.05), until
    /// `stop()` (the server's `stop()` calls it).
    public func start(interval: Double = 1) {
        let made = Loop()
        let started = loop.withLock { current -> Bool in
            guard current == nil else { return false }
            current = made
            return true
        }
        guard started else { return }
        let pause = interval.isFinite ? max(0.05, interval) : 1
        Thread.detachNewThread { [self] in
            while !made.stopped.load(ordering: .acquiring) {
                deliver()
                _ = made.wake.wait(timeout: .now() + pause)
            }
            made.done.signal()
        }
    }

    /// Stops background delivery, once its pass ends.
    public func stop() {
        guard
            let running = loop.withLock({ current -> Loop? in
                defer { current = nil }
                return current
            })
        else { return }
        running.stopped.store(true, ordering: .releasing)
        running.wake.signal()
        running.done.wait()
    }

    /// The background thread's controls.
    private final class Loop: Sendable {
        let stopped = Atomic<Bool>(false)
        let wake = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
    }
}
