/// What a bounded read of a stream saw: the elements in order, and whether the one the reader
/// waited for came before the deadline. A test that waits for an event then fails, rather than
/// hanging the whole run, when the event never comes.
public struct StreamReading<Element: Sendable>: Sendable {
    /// Every element read, the awaited one last when it came.
    public var elements: [Element]
    /// True when an element satisfied the condition; false when the deadline passed or the
    /// stream ended first.
    public var reached: Bool

    /// Reads `stream` until an element satisfies `condition` (that element included), the
    /// stream ends, or `seconds` of real time pass.
    public static func read(
        _ stream: AsyncStream<Element>, within seconds: Int = 30, until condition: @escaping @Sendable (Element) -> Bool
    ) async -> StreamReading<Element> {
        await withTaskGroup(of: StreamReading<Element>?.self) { group in
            group.addTask {
                var elements: [Element] = []
                for await element in stream {
                    elements.append(element)
                    if condition(element) { return StreamReading(elements: elements, reached: true) }
                }
                return StreamReading(elements: elements, reached: false)
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return nil
            }
            // The first to finish wins; cancelling the reader ends its `for await` with what it had.
            let first = await group.next() ?? nil
            group.cancelAll()
            if let first { return first }
            return await group.next().flatMap { $0 } ?? StreamReading(elements: [], reached: false)
        }
    }
}
