import FormSyncProtocol
import Foundation

extension Outbox {
    /// Tunables of the outbox.
    public struct Configuration: Sendable {
        /// How many lanes may be on the wire at once.
        public var concurrency: Int
        /// Backoff and the attempt limit after which an item is parked as exhausted.
        public var retry: RetryPolicy
        /// How long a lease lasts (1 second to a day); must exceed the transport's request
        /// timeout, since an expired lease is presumed dead and its item is sent again (same
        /// attempt identity).
        public var lease: Duration { .milliseconds(leaseMilliseconds) }
        var leaseMilliseconds: Int64
        /// How many times one flush refreshes the token before it gives up and reports it.
        public var maxAuthRefreshesPerFlush: Int
        /// How many file uploads may be on the wire at once, beside (not within) the
        /// `concurrency` lanes of submissions: a form never waits behind another item's video.
        public var uploadConcurrency: Int
        /// Runs on each attachment before it is stashed (to downscale or re-encode a photo,
        /// say); the stash measures and digests what it returns. Nil stashes files as they are.
        public var attachmentTransform: AttachmentTransform?
        /// The data-protection class of the database, its log and the stash on iOS (see
        /// `FileProtection`); no effect on macOS and Linux.
        public var fileProtection: FileProtection
        /// Files larger than this (bytes) wait for an unmetered network while the network is
        /// `expensive` (25 MB: a courier's photos go on cellular, a walkthrough video waits).
        public var expensiveNetworkFileLimit: Int64
        /// Files larger than this wait while the network is `constrained` (Low Data Mode: 2 MB).
        public var constrainedNetworkFileLimit: Int64
        /// How long an upload handed to an OS background-transfer service stays leased
        /// (`Outbox.leaseBackgroundUploads`): a day by default, since the OS runs it when it sees fit.
        public var backgroundLease: Duration { .milliseconds(backgroundLeaseMilliseconds) }
        var backgroundLeaseMilliseconds: Int64 = 86_400_000
        /// Bytes the attachment cache (stored files fetched with `Outbox.file(for:)`) may hold
        /// before the least recently used go (256 MB); files a queued item names are kept.
        public var attachmentCacheBytes: Int64 = 256_000_000
        /// What the device says of itself in its support bundles (`Outbox.supportBundle`): its
        /// name, app and spec versions.
        public var supportDevice: DeviceReport?
        /// Whether support bundles carry the items' payloads (what people captured: addresses,
        /// amounts). Off unless the app opts in; file bytes and tokens are never in a bundle.
        public var supportBundlePayloads = false
        /// The longest lease this outbox gives: a lease ending later is from a clock that jumped back.
        var longestLeaseMilliseconds: Int64 { max(leaseMilliseconds, backgroundLeaseMilliseconds) }

        /// How far ahead of the clock a due time or lease may lie before it is taken for the
        /// mark of a clock that jumped back and is treated as due (or expired).
        /// The size above which files wait on a network of `cost`; nil: none wait.
        func fileLimit(on cost: NetworkCost) -> Int64? {
            switch cost {
            case .unmetered: return nil
            case .expensive: return expensiveNetworkFileLimit
            case .constrained: return min(constrainedNetworkFileLimit, expensiveNetworkFileLimit)
            }
        }

        var horizonMilliseconds: Int64 {
            max(retry.maxDelayMilliseconds, retry.maxRetryAfterMilliseconds, longestLeaseMilliseconds, 1000)
        }

        public init(
            concurrency: Int = 4, retry: RetryPolicy = RetryPolicy(), lease: Duration = .seconds(60), maxAuthRefreshesPerFlush: Int = 3,
            uploadConcurrency: Int = 2, attachmentTransform: AttachmentTransform? = nil,
            fileProtection: FileProtection = .completeUntilFirstUserAuthentication, expensiveNetworkFileLimit: Int64 = 25_000_000,
            constrainedNetworkFileLimit: Int64 = 2_000_000, backgroundLease: Duration = .seconds(86_400),
            attachmentCacheBytes: Int64 = 256_000_000
        ) {
            self.attachmentCacheBytes = max(0, attachmentCacheBytes)
            self.backgroundLeaseMilliseconds = min(max(1000, backgroundLease.clampedMilliseconds), 7 * 86_400_000)
            self.fileProtection = fileProtection
            self.expensiveNetworkFileLimit = max(0, expensiveNetworkFileLimit)
            self.constrainedNetworkFileLimit = max(0, constrainedNetworkFileLimit)
            self.concurrency = max(1, concurrency)
            self.uploadConcurrency = max(1, uploadConcurrency)
            self.attachmentTransform = attachmentTransform
            self.retry = retry
            self.leaseMilliseconds = min(max(1000, lease.clampedMilliseconds), 86_400_000)
            self.maxAuthRefreshesPerFlush = maxAuthRefreshesPerFlush
        }
    }
}
