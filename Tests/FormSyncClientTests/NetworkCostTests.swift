import FieldForms
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncClient

/// Large files wait for an unmetered network, submissions never do, and a person can send a
/// file now on any network; the app sees "waiting for Wi-Fi" in states, counts and events.
struct NetworkCostTests {
    func harness() throws -> Harness {
        let h = try Harness()
        h.configuration = Outbox.Configuration(expensiveNetworkFileLimit: 50_000, constrainedNetworkFileLimit: 10_000)
        return h
    }

    @Test func onAnExpensiveNetworkALargeFileWaitsWhileSubmissionsAndSmallFilesGo() async throws {
        let h = try harness()
        let outbox = try h.open()
        let events = outbox.events()
        try await outbox.setNetworkCost(.expensive)
        let (large, small) = (outbox.placeholderIDs.next(), outbox.placeholderIDs.next())
        let shop = try await outbox.enqueue(
            NewCustomer(name: "Large", segment: .retail, shopFront: FileRef(id: large, contentType: "image/jpeg")),
            attachments: [.init(placeholder: large, source: try h.cameraFile("large.jpg", bytes: 200_000), contentType: "image/jpeg")])
        try await outbox.enqueue(
            NewCustomer(name: "Small", segment: .retail, shopFront: FileRef(id: small, contentType: "image/jpeg")),
            attachments: [.init(placeholder: small, source: try h.cameraFile("small.jpg", bytes: 20_000), contentType: "image/jpeg")])
        try await outbox.enqueue(order(1), documentID: "order")
        _ = await outbox.flush()
        let sent = h.transport.requests
        #expect(sent.contains { $0.documentID == "order" }, "JSON never waits")
        #expect(sent.filter(\.isFileUpload).count == 1, "the small file went, the large one waits")
        let waiting = try await outbox.items(in: [.waitingForUnmeteredNetwork])
        #expect(waiting.count == 1)
        #expect(waiting.first?.kind == .file)
        #expect(await outbox.stateCounts()[.waitingForUnmeteredNetwork] == 1)
        // (The scripted server announces no deferred files: the shop waits for its photo.)
        #expect(try await outbox.item(shop)?.state == .savedOnDevice)
        #expect(await outbox.nextDueTime() == nil, "nothing the engine should wake for")

        // "Send now" on the shop sends its photo on the expensive network.
        try await outbox.sendOnAnyNetwork(shop)
        _ = await outbox.flush()
        #expect(h.transport.requests.filter(\.isFileUpload).count == 2)
        #expect(try await outbox.item(shop)?.state == .confirmed)
        #expect(await outbox.stateCounts()[.waitingForUnmeteredNetwork] == nil)

        let reading = await StreamReading.read(events, within: 5) { if case .networkCost = $0 { true } else { false } }
        #expect(reading.elements.last == .networkCost(.expensive, waitingFiles: 0))
    }

    @Test func aFileThatWaitedGoesWhenTheNetworkIsUnmeteredAndTheCostOutlivesARestart() async throws {
        let h = try harness()
        var outbox = try h.open()
        try await outbox.setNetworkCost(.constrained)
        let photo = outbox.placeholderIDs.next()
        try await outbox.enqueue(
            NewCustomer(name: "Shop", segment: .retail, shopFront: FileRef(id: photo, contentType: "image/jpeg")),
            attachments: [.init(placeholder: photo, source: try h.cameraFile("mid.jpg", bytes: 20_000), contentType: "image/jpeg")])
        _ = await outbox.flush()
        #expect(h.transport.requests.isEmpty, "20 KB is over Low Data Mode's 10 KB")
        outbox = try h.open()
        _ = await outbox.flush()
        #expect(h.transport.requests.isEmpty, "still waiting after a restart")
        #expect(await outbox.stateCounts()[.waitingForUnmeteredNetwork] == 1)
        let signals = outbox.workSignals()
        try await outbox.setNetworkCost(.unmetered)
        var woken = false
        for await _ in signals {
            woken = true
            break
        }
        #expect(woken)
        _ = await outbox.flush()
        #expect(h.transport.requests.filter(\.isFileUpload).count == 1)
        #expect(await outbox.stateCounts()[.confirmed] == 2)
    }
}
