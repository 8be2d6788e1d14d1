import Foundation
import Synchronization
import Testing

@testable import FormSyncClient

/// The pull's prefetch of pages: in order, never more than its depth ahead of what was taken,
/// stopping at the last page, and at once when cancelled.
struct FeedPrefetchTests {
    /// A feed of `count` pages (`c1`…), each with one change, the last without `more`; counts
    /// the requests and checks, as each is made, that at most `depth` pages wait untaken.
    final class Feed: Sendable {
        struct Counts {
            var requests: [String?] = []
            var taken = 0
            var limits: [Int] = []
            var overrun = false
        }
        let counts = Mutex(Counts())
        let count: Int
        let depth: Int

        init(count: Int, depth: Int) {
            self.count = count
            self.depth = depth
        }

        func fetch(_ cursor: String?, _ limit: Int) -> PullOutcome {
            let n = (cursor.flatMap { Int($0.dropFirst()) } ?? 0) + 1
            counts.withLock {
                // This request's page waits with those fetched before it and not taken.
                if $0.requests.count - $0.taken >= depth + 1 { $0.overrun = true }
                $0.requests.append(cursor)
                $0.limits.append(limit)
            }
            return .page(
                ChangePage(
                    changes: [RecordChange(type: "Delivery", id: Int64(n), version: 1, fields: Data("{}".utf8))], cursor: "c\(n)",
                    more: n < count))
        }

        func prefetch() -> FeedPrefetch {
            FeedPrefetch(
                cursor: nil, firstLimit: 10, limit: 500, depth: depth, fetch: { cursor, limit, _ in self.fetch(cursor, limit) },
                read: { page in RecordStore.FetchedPage(keys: page.changes.map { _ in [] }, subscribed: page.changes.map { _ in false }) })
        }
    }

    @Test(arguments: [1, 2, 3])
    func pagesComeInOrderNeverMoreThanTheDepthAheadAndStopAtTheLast(depth: Int) async {
        let feed = Feed(count: 40, depth: depth)
        let prefetch = feed.prefetch()
        var cursors: [String] = []
        while let read = await prefetch.next() {
            guard case .page(let page) = read.outcome else {
                Issue.record("not a page: \(read.outcome)")
                break
            }
            #expect(read.fetched?.keys.count == page.changes.count, "each page read before it is handed over")
            cursors.append(page.cursor)
            feed.counts.withLock { $0.taken += 1 }
        }
        #expect(cursors == (1...40).map { "c\($0)" })
        let counts = feed.counts.withLock { $0 }
        #expect(counts.requests == [nil] + (1..<40).map { "c\($0)" }, "each page asked once, after the one before it")
        #expect(counts.limits == [10] + Array(repeating: 500, count: 39), "the first page small, then the page size")
        #expect(!counts.overrun, "never more than \(depth) pages fetched and not taken")
    }

    @Test func anOutcomeThatIsNotAPageEndsTheFetchingAfterIt() async {
        let calls = Mutex(0)
        let prefetch = FeedPrefetch(
            cursor: "c1", firstLimit: 5, limit: 5,
            fetch: { _, _, _ in
                calls.withLock { $0 += 1 }
                return .authExpired
            },
            read: { _ in RecordStore.FetchedPage() })
        #expect(await prefetch.next()?.outcome == .authExpired)
        #expect(await prefetch.next() == nil)
        #expect(calls.withLock { $0 } == 1)
    }

    /// Cancelled while it waits for room, the prefetch hands over nothing more and asks for
    /// nothing more.
    @Test func aCancelledPrefetchEndsAndAsksForNothingMore() async {
        let feed = Feed(count: 1_000, depth: 2)
        let prefetch = feed.prefetch()
        #expect(await prefetch.next() != nil)
        prefetch.cancel()
        #expect(await prefetch.next() == nil)
        let asked = feed.counts.withLock { $0.requests.count }
        #expect(asked <= 4, "the first page, the two ahead of it, and at most the one on its way when cancelled")
    }

    /// A pull waiting for a page the server holds (a long-poll) ends as soon as its task is
    /// cancelled, and the request's task is cancelled with it.
    @Test(.timeLimit(.minutes(1)))
    func aCallerCancelledWhileAPageIsHeldGetsNoneAtOnce() async {
        let started = AsyncStream<Void>.makeStream()
        let ended = AsyncStream<Void>.makeStream()
        let prefetch = FeedPrefetch(
            cursor: nil, firstLimit: 5, limit: 5,
            fetch: { _, _, _ in
                started.continuation.yield()
                try? await Task.sleep(for: .seconds(3_600))
                ended.continuation.yield()
                return .unreachable(reason: "cancelled")
            },
            read: { _ in RecordStore.FetchedPage() })
        let waiting = Task { await prefetch.next() }
        var iterator = started.stream.makeAsyncIterator()
        _ = await iterator.next()
        waiting.cancel()
        #expect(await waiting.value == nil)
        #expect(await prefetch.next() == nil)
        // The held request's task was cancelled: its sleep ends, long before its hour.
        var endings = ended.stream.makeAsyncIterator()
        _ = await endings.next()
    }
}
