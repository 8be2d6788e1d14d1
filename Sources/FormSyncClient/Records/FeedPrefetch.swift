import Synchronization

/// The pages of one feed, fetched and read ahead of the pull that stores them: the request for
/// a page goes as soon as the page before it has arrived (its cursor known), not when that page
/// has been read and committed, so the server makes one page while the device reads another
/// and commits a third. At most `depth` pages are fetched and not yet taken; fetching stops at
/// the first outcome that is not a page with more after it, or one that is empty or whose
/// cursor does not move.
/// Nothing here is stored: a pull that ends drops what was fetched ahead (`cancel`), and a
/// request on its way ends by its reply or its timeout (`CancellationShield`).
final class FeedPrefetch: Sendable {
    typealias Fetch = @Sendable (_ cursor: String?, _ limit: Int, _ first: Bool) async -> PullOutcome
    typealias Read = @Sendable (ChangePage) async -> RecordStore.FetchedPage

    private struct State {
        /// Pages fetched (each read by its own task), oldest first.
        var fetched: [Task<RecordStore.ReadOutcome, Never>] = []
        /// Whether no page will be added any more.
        var ended = false
        var consumer: CheckedContinuation<Task<RecordStore.ReadOutcome, Never>?, Never>?
        var producer: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    private let depth: Int
    private let producer = Mutex<Task<Void, Never>?>(nil)

    /// Starts fetching after `cursor`: the first page asks for `firstLimit` changes, the others
    /// for `limit`.
    /// How many pages are fetched ahead unless told otherwise.
    static let defaultDepth = 2

    init(cursor: String?, firstLimit: Int, limit: Int, depth: Int = defaultDepth, fetch: @escaping Fetch, read: @escaping Read) {
        self.depth = max(1, depth)
        let task = Task { [self] in
            var cursor = cursor
            var pageLimit = firstLimit
            var first = true
            while !Task.isCancelled {
                let outcome = await fetch(cursor, pageLimit, first)
                first = false
                pageLimit = limit
                let reading = Task { () -> RecordStore.ReadOutcome in
                    guard case .page(let page) = outcome else { return RecordStore.ReadOutcome(outcome: outcome, fetched: nil) }
                    return RecordStore.ReadOutcome(outcome: outcome, fetched: await read(page))
                }
                guard case .page(let page) = outcome, page.more, !page.stalls(after: cursor), !Task.isCancelled else {
                    hand(reading, last: true)
                    return
                }
                cursor = page.cursor
                await add(reading)
            }
            end()
        }
        producer.withLock { $0 = task }
    }

    /// The next page in order, read; nil once every fetched page was taken and none follows,
    /// or at once when the caller is cancelled (which cancels the prefetch).
    func next() async -> RecordStore.ReadOutcome? {
        let task = await withTaskCancellationHandler {
            await waitForPage()
        } onCancel: {
            cancel()
        }
        return await task?.value
    }

    private func waitForPage() async -> Task<RecordStore.ReadOutcome, Never>? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Task<RecordStore.ReadOutcome, Never>?, Never>) in
            let answer: Task<RecordStore.ReadOutcome, Never>?? = state.withLock { state in
                if !state.fetched.isEmpty {
                    let first = state.fetched.removeFirst()
                    state.producer?.resume()
                    state.producer = nil
                    return .some(first)
                }
                if state.ended { return .some(nil) }
                state.consumer = continuation
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Stops fetching: pages fetched and not taken are dropped.
    func cancel() {
        producer.withLock { $0?.cancel() }
        state.withLock { state in
            state.fetched.removeAll()
            Self.close(&state)
        }
    }

    /// Hands a page to the consumer, or keeps it for the next `next()`; the last closes.
    private func hand(_ page: Task<RecordStore.ReadOutcome, Never>, last: Bool) {
        state.withLock { state in
            if state.ended { return }
            if let consumer = state.consumer {
                state.consumer = nil
                consumer.resume(returning: page)
            } else {
                state.fetched.append(page)
            }
            if last { Self.close(&state) }
        }
    }

    /// Hands a page on, then waits while `depth` pages are waiting untaken.
    private func add(_ page: Task<RecordStore.ReadOutcome, Never>) async {
        hand(page, last: false)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let proceed = state.withLock { state in
                guard !state.ended, state.fetched.count >= depth else { return true }
                state.producer = continuation
                return false
            }
            if proceed { continuation.resume() }
        }
    }

    private func end() {
        state.withLock { Self.close(&$0) }
    }

    private static func close(_ state: inout State) {
        state.ended = true
        state.consumer?.resume(returning: nil)
        state.consumer = nil
        state.producer?.resume()
        state.producer = nil
    }
}
