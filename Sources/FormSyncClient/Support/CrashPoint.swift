import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Named moments where `formsync-lab torture crash` kills the device process with SIGKILL, to prove
/// that a kill at any of them loses nothing and applies nothing twice. Unarmed (always, outside
/// the torture harness), reaching a point costs one atomic load.
package enum CrashPoint: String, CaseIterable, Sendable {
    /// Attachments are in the stash; the enqueue's transaction has not committed.
    case stashCopied = "stash-copied"
    /// An item's lease is committed; its request has not left.
    case leased
    /// The server answered with success; the outbox has not recorded it.
    case delivered
    /// A page of the change feed arrived; it has not been committed.
    case pullPage = "pull-page"
    /// A chunk of a resumable upload was acknowledged; the upload is not finished.
    case uploadChunk = "upload-chunk"
    /// A draft's save committed; the call has not returned.
    case draftSaved = "draft-saved"
    /// A file attached to a draft is copied into the stash; the draft does not name it yet.
    case draftAttached = "draft-attached"
    /// A submitted draft's item is queued; the draft is not yet discarded.
    case draftSubmitted = "draft-submitted"

    private static let armed = Atomic<Bool>(false)
    private static let target = Mutex<(point: CrashPoint, remaining: Int)?>(nil)

    /// Kills the process the `occurrence`-th time `point` is reached (from 1).
    package static func arm(_ point: CrashPoint, occurrence: Int) {
        target.withLock { $0 = (point, max(1, occurrence)) }
        armed.store(true, ordering: .releasing)
    }

    /// Marks this moment; kills the process when it is the armed one.
    package func reach() {
        guard Self.armed.load(ordering: .acquiring) else { return }
        let fire = Self.target.withLock { target -> Bool in
            guard let armed = target, armed.point == self else { return false }
            target = (self, armed.remaining - 1)
            return armed.remaining <= 1
        }
        if fire { kill(getpid(), SIGKILL) }
    }
}
