/// What the network the device is on costs, as the OS says it (`NWPath.isExpensive` and
/// `isConstrained` on iOS and macOS; a plain value elsewhere). Large files wait for an unmetered
/// network (`Outbox.Configuration.expensiveNetworkFileLimit`, `constrainedNetworkFileLimit`);
/// submissions never wait.
public enum NetworkCost: String, Sendable, Hashable, Codable, CaseIterable {
    /// Wi-Fi or wired: everything goes.
    case unmetered
    /// Cellular data or a personal hotspot (`isExpensive`): files above the expensive limit wait.
    case expensive
    /// The person asked the OS to save data (Low Data Mode, `isConstrained`): files above the
    /// constrained limit wait.
    case constrained
}

/// One reading of the device's network, for `SyncEngine.run(paths:)`: whether any network is
/// there (a hint; the server's health decides "online") and what it costs.
public struct NetworkPath: Sendable, Hashable {
    public var isReachable: Bool
    public var cost: NetworkCost

    public init(isReachable: Bool, cost: NetworkCost = .unmetered) {
        self.isReachable = isReachable
        self.cost = cost
    }
}
