/// Gathers the placeholder ids of a payload in field order, each once. Generated
/// `placeholders` properties feed it every file and reference field they hold.
public struct PlaceholderCollector: Sendable {
    public private(set) var ids: [Int64] = []
    private var seen: Set<Int64> = []

    public init() {}

    /// Adds `id` when it is a placeholder (negative) not seen before.
    public mutating func add(_ id: Int64?) {
        guard let id, id < 0, seen.insert(id).inserted else { return }
        ids.append(id)
    }
}
