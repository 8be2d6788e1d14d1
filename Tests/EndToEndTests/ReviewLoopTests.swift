import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import FormSyncTesting
import Foundation
import Testing

/// The back office's half of the loop over real HTTP (docs/PROTOCOL.md, "The back office's
/// half"): a supervisor sends a submission back, the courier's device reopens it in its next
/// pull, the fix lands as the document's next version, and every version names its author; a
/// conflict the device parks names whose change it met.
struct ReviewLoopTests {
    static func office(_ server: SyncServer) -> HTTPTransport {
        HTTPTransport(workspace: "acme", baseURL: server.baseURL) {
            try? server.issueAccessToken(principal: "supervisor", workspaces: ["acme"], role: .backOffice)
        }
    }

    static func done<T>(_ reply: BackOfficeReply<T>, _ what: String) throws -> T {
        guard case .done(let value) = reply else { throw Failure(description: "\(what): \(reply)") }
        return value
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    @Test func aSubmissionSentBackWithIssuesIsReopenedFixedAndLandsAsTheDocumentsNextVersion() async throws {
        let (folder, server) = try DeviceEnrolmentTests.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let ana = try await SupportBundleTests.device("ana", folder, server)
        let events = ana.outbox.events()
        let sent = try await ana.outbox.enqueue(NewCustomer(name: "Harbor cafe", segment: .retail))
        #expect(await ana.outbox.flush().sent == 1)
        let item = try #require(try await ana.outbox.item(sent))
        let office = Self.office(server)

        let review = try Self.done(
            await office.review(
                item.documentID,
                ReviewRequest(
                    verdict: .hasIssues, version: 1, comment: "Spell it as on the sign",
                    issues: [Review.Issue(pointer: "#/name", detail: "The sign says Harbour Café")])), "review")
        #expect(review.reviewer == "supervisor" && review.version == 1)

        let pulled = try await ana.outbox.pull()
        #expect(pulled.reviews == 1)
        var seen: [SyncEvent] = []
        for await event in events {
            seen.append(event)
            if case .reviewed = event { break }
        }
        #expect(seen.last == .reviewed(item: sent, review: review, reopened: true), "\(seen.suffix(3))")
        let reopened = try #require(try await ana.outbox.item(sent))
        #expect(reopened.state == .rejected)
        #expect(reopened.fieldErrors == [FieldError(pointer: "#/name", code: "review", detail: "The sign says Harbour Café")])
        #expect(reopened.lastError == "sent back by supervisor: Spell it as on the sign")
        #expect(try await ana.outbox.reviews(of: item.documentID) == [review])

        // The courier fixes it in the existing flow: same document, a new attempt.
        var fixed = try #require(try reopened.decodedPayload(as: NewCustomer.self))
        fixed.name = "Harbour Café"
        try await ana.outbox.resubmit(sent, with: fixed)
        #expect(await ana.outbox.flush().sent == 1)
        let document = try #require(server.document(item.documentID))
        #expect(document.version == 2 && document.appliedWrites == 2)
        #expect(try await ana.outbox.record(Customer.self, id: document.id)?.name == "Harbour Café")

        // The supervisor approves the fix; the device hears of it, and reopens nothing.
        let approval = try Self.done(await office.review(item.documentID, ReviewRequest(verdict: .approved, version: 2)), "approve")
        _ = try await ana.outbox.pull()
        #expect(try await ana.outbox.item(sent)?.state == .confirmed)
        #expect(try await ana.outbox.reviews(of: item.documentID) == [review, approval])

        let history = try Self.done(await office.history(ofDocument: item.documentID), "history")
        #expect(history.entries.map(\.event) == [.accepted, .reviewed, .edited, .reviewed])
        let authors = history.entries.map { "\($0.author.principal ?? "-") \($0.author.via.rawValue)" }
        #expect(authors == ["ana submission", "supervisor review", "ana submission", "supervisor review"])
        #expect(history.entries[0].author.deviceID == ana.enrolled.deviceID && history.entries[0].author.capturedAt != nil)
        #expect(history.entries[2].changes.map(\.pointer) == ["#/name"])
        #expect(history.entries[2].changes.first?.old == .string("Harbor cafe"))

        // The feed carries each version and verdict once, in order.
        let feed = try Self.done(await office.submissions(), "feed")
        #expect(feed.submissions.map(\.event) == [.accepted, .reviewed, .edited, .reviewed])
        #expect(feed.submissions.compactMap(\.review?.verdict) == [.hasIssues, .approved])
    }

    @Test func aConflictTheDeviceParksNamesTheBackOfficePersonWhoseChangeItMet() async throws {
        let (folder, server) = try DeviceEnrolmentTests.world()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        let customer = try server.putRecord(
            Customer(name: "Lopes", segment: .retail, creditLimit: Money(minorUnits: 10_000, currency: "EUR")), workspace: "acme")
        let ana = try await SupportBundleTests.device("ana", folder, server)
        _ = try await ana.outbox.pull()
        try await ana.outbox.edit(CustomerUpdate.self, id: customer.id) { $0.creditLimit = Money(minorUnits: 90_000, currency: "EUR") }
        var changed = customer
        changed.creditLimit = Money(minorUnits: 20_000, currency: "EUR")
        _ = try server.putRecord(changed, workspace: "acme", author: "dispatcher")

        _ = await ana.outbox.flush()
        let parked = try #require(try await ana.outbox.items(in: [.conflict]).first)
        let author = try #require(parked.lastChange)
        #expect(author.principal == "dispatcher" && author.via == .backOffice)
        #expect(author.at.hasPrefix("20"), "the server's time, RFC 3339")
    }
}
