import FormSyncProtocol
import Foundation
import Testing

@testable import FormSyncClient

/// A support bundle too large for the protocol loses its oldest items until it fits; one that
/// fits is sent whole.
struct SupportBundleFittingTests {
    static func bundle(items: Int, historyPerItem: Int) -> SupportBundle {
        SupportBundle(
            createdAt: "2026-12-06T10:00:00Z", answering: nil, device: nil, outboxSchema: 12, workspaces: ["acme"], counts: [:],
            recordsHeld: 0, settings: [:], people: [], revoked: nil, includesPayloads: false,
            items: (1...items).map { id in
                SupportBundle.Item(
                    id: Int64(id), workspace: "acme", principal: nil, kind: "submission", form: "SalesOrder", formVersion: 2,
                    state: "exhausted", attempts: historyPerItem, lastError: "HTTP 503", documentID: "d-\(id)", lane: "Customer:\(id)",
                    fieldErrors: [],
                    history: (0..<historyPerItem).map { _ in
                        SupportBundle.Attempt(
                            at: "2026-12-06T10:00:00Z", outcome: "transient", status: 503, reason: "the server is busy", milliseconds: 12)
                    }, payload: nil)
            })
    }

    @Test func aBundleOverTheLimitLosesItsOldestItemsUntilItFitsAndOneThatFitsIsWhole() throws {
        let large = Self.bundle(items: SupportBundle.maxItems, historyPerItem: 20)
        let size = try JSONEncoder().encode(large).count
        #expect(size > SupportBundle.maxBytes, "the case is one a device can reach: \(size) bytes")
        let fitted = Outbox.fitting(large, within: SupportBundle.maxBytes)
        #expect(try JSONEncoder().encode(fitted).count <= SupportBundle.maxBytes)
        #expect(!fitted.items.isEmpty && fitted.items.last?.id == Int64(SupportBundle.maxItems), "the newest are kept")
        #expect(fitted.items.map(\.id) == Array(fitted.items.map(\.id).sorted()))
        let small = Self.bundle(items: 3, historyPerItem: 2)
        #expect(Outbox.fitting(small, within: SupportBundle.maxBytes) == small)
    }
}
