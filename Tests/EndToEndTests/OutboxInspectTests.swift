import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import Foundation
import Testing

/// `formsync outbox inspect` as a support engineer uses it on a device's outbox: counts and
/// items by state, one item with its history, payload and field errors, and a support bundle
/// — never a token, never a file's bytes.
struct OutboxInspectTests {
    @Test func inspectShowsItemsHistoryAndABundleWithNoTokenAndNoFileBytes() async throws {
        let world = try World()
        let token = try world.server.issueAccessToken(workspaces: ["acme"])
        let transport = HTTPTransport(workspace: "acme", baseURL: world.server.baseURL, timeout: .seconds(120)) { token }
        let path = world.directory.appendingPathComponent("support.sqlite").path
        let outbox = try Outbox(path: path, forms: FormCatalog.forms, transport: transport)
        let photoBytes =
            Data(MediaSignature.signature(of: "image/jpeg")!) + Data("JPEG-SECRET-PIXELS-".utf8) + Data(repeating: 7, count: 2000)
        let photoURL = world.directory.appendingPathComponent("front.jpg")
        try photoBytes.write(to: photoURL)
        let photo = outbox.placeholderIDs.next()
        try await outbox.enqueue(
            NewCustomer(name: "Shop", segment: .retail, shopFront: FileRef(id: photo, contentType: "image/jpeg")),
            attachments: [.init(placeholder: photo, source: photoURL, contentType: "image/jpeg")])
        var bad = salesOrder(customer: 4711, marker: "PO-77")
        bad.paymentTermsDays = 90
        // The shop's record (its photo goes after it) and the order each meet a 503 once.
        world.server.faults.add(.unavailable(retryAfterSeconds: 1), count: 2, target: .submissions)
        let order = try await outbox.enqueue(bad)
        _ = await outbox.flush()

        func inspect(_ arguments: String...) async throws -> ProcessRunner.Result {
            try await ProcessRunner.run(DemoProcessTests.formsync, ["outbox", "inspect", path, "--workspace", "acme"] + arguments)
        }
        let overview = try await inspect()
        #expect(overview.status == 0, "\(overview.errors)")
        // Without --workspace, an app's outbox (here in workspace acme) shows all it holds.
        let plain = try await ProcessRunner.run(DemoProcessTests.formsync, ["outbox", "inspect", path])
        let every = try #require(try JSONSerialization.jsonObject(with: Data(plain.output.utf8)) as? [String: Any])
        #expect(every["workspaces"] as? [String] == ["acme"])
        #expect((every["items"] as? [Any])?.count == 3)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(overview.output.utf8)) as? [String: Any])
        let items = try #require(object["items"] as? [[String: Any]])
        #expect(items.count == 3)
        let one = try await inspect("--item", "\(order)")
        let detail = try #require(try JSONSerialization.jsonObject(with: Data(one.output.utf8)) as? [String: Any])
        #expect((detail["payload"] as? [String: Any])?["customer_reference"] as? String == "PO-77")
        let history = try #require(detail["history"] as? [[String: Any]])
        #expect(history.first?["outcome"] as? String == "transient")
        #expect(history.first?["status"] as? Int == 503)
        let pending = try await inspect("--state", "saved_on_device")
        let waiting = items.filter { $0["state"] as? String == "saved_on_device" }.count
        #expect(waiting == 2, "the shop and the order wait out their 503")
        #expect(
            ((try JSONSerialization.jsonObject(with: Data(pending.output.utf8)) as? [String: Any])?["items"] as? [Any])?.count == waiting)

        let bundle = world.directory.appendingPathComponent("bundle.json")
        #expect(try await inspect("--bundle", bundle.path).status == 0)
        let text = try String(contentsOf: bundle, encoding: .utf8)
        #expect(text.contains("\"formsync_bundle\""))
        #expect(text.contains("PO-77"))
        for output in [overview.output, one.output, text] {
            #expect(!output.contains(token), "a token in the output")
            #expect(!output.contains("JPEG-SECRET-PIXELS"), "a file's bytes in the output")
        }
        #expect(try await inspect("--item", "99999").status == 1)
        #expect(try await inspect("--state", "lost").status == 2)
    }
}
