import FormSyncClient
import FormSyncTesting
import Foundation
import Synchronization

/// A device's transport to a cluster of server nodes: each request (a submission, a whole
/// upload attempt, a feed page, a probe) goes to a node picked at random, as a load balancer
/// without affinity would send it. What one node began, the next attempt may finish on another.
final class NodeSpreadingTransport: OutboxTransport {
    let nodes: [HTTPTransport]
    private let random = Mutex(
        SplitMix64(state: UInt64(truncatingIfNeeded: getpid()) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(Date().timeIntervalSince1970 * 1000)))

    init(_ nodes: [HTTPTransport]) {
        precondition(!nodes.isEmpty)
        self.nodes = nodes
    }

    var workspace: String { nodes[0].workspace }

    private func any() -> HTTPTransport {
        nodes[Int(random.withLock { $0.next() } % UInt64(nodes.count))]
    }

    func send(_ request: OutboundRequest) async -> DeliveryOutcome { await any().send(request) }
    func probe() async -> Bool { await any().probe() }
    func fetchChanges(cursor: String?, limit: Int) async -> PullOutcome { await any().fetchChanges(cursor: cursor, limit: limit) }
    func deliver(
        _ request: OutboundRequest, progress: @escaping @Sendable (Int64, Int64) -> Void
    ) async -> (DeliveryOutcome, DeliveryDetails) {
        await any().deliver(request, progress: progress)
    }
}
