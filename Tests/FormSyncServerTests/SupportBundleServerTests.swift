import FormSyncProtocol
import FormSyncServer
import Foundation
import Testing

/// Support bundles request by request on the store this run tests (docs/PROTOCOL.md, "Support
/// bundles"): a request reaches its own device's feed only, is answered once, by that device
/// alone, and everything the routes read is bounded.
struct SupportBundleServerTests {
    typealias Setup = DeviceCredentialTests.Setup

    static func bundle(answering: Int64?, items: Int = 0, name: String = "Van 12") -> SupportBundle {
        SupportBundle(
            createdAt: "2026-12-06T10:00:00Z", answering: answering, device: DeviceReport(name: name), outboxSchema: 12,
            workspaces: ["acme"], counts: ["saved_on_device": items], recordsHeld: 0, settings: [:], people: [], revoked: nil,
            includesPayloads: false,
            items: (0..<items).map {
                SupportBundle.Item(
                    id: Int64($0 + 1), workspace: "acme", principal: nil, kind: "submission", form: "NewCustomer", formVersion: 1,
                    state: "saved_on_device", attempts: 0, lastError: nil, documentID: "d-\($0)", lane: "document:d-\($0)",
                    fieldErrors: [], history: [], payload: nil)
            })
    }

    /// A device enrolled for `principal`: its id and access token.
    static func device(_ s: Setup, _ principal: String, installation: String) throws -> (id: String, token: String) {
        let enrolled = try s.enrol(try s.enrolment(for: principal), installation: installation).decoded(Credentials.self)
        return (enrolled.deviceID, enrolled.accessToken)
    }

    static func supportRequest(in page: Setup.Reply) -> Int64? {
        ((page.json[FeedPage.supportRequest] as? [String: Any])?["id"] as? NSNumber)?.int64Value
    }

    @Test func aRequestReachesItsOwnDevicesFeedOnlyAndIsAnsweredOnceByThatDevice() throws {
        let s = try Setup()
        let ana = try Self.device(s, "ana", installation: "install-ana-1")
        let bo = try Self.device(s, "bo", installation: "install-bo-01")
        let asked = s.send(
            "POST", "/support/requests", token: s.office, body: s.json(SupportRequestCreate(deviceID: ana.id, reason: "stuck")))
        #expect(asked.status == 201)
        let request = try asked.decoded(SupportRequest.self)
        #expect(request.deviceID == ana.id && request.reason == "stuck" && request.answeredAt == nil)
        #expect(Self.supportRequest(in: s.pull(ana.token)) == request.id)
        #expect(Self.supportRequest(in: s.pull(bo.token)) == nil, "another device is not asked")

        let stolen = s.send("POST", "/support/bundles", token: bo.token, body: s.json(Self.bundle(answering: request.id)))
        #expect(stolen.status == 404 && stolen.code == "no-such-support-request")
        #expect(Self.supportRequest(in: s.pull(ana.token)) == request.id, "still open")
        let answered = s.send("POST", "/support/bundles", token: ana.token, body: s.json(Self.bundle(answering: request.id, items: 2)))
        #expect(answered.status == 201)
        #expect(Self.supportRequest(in: s.pull(ana.token)) == nil, "answered: the feed no longer carries it")

        let listed = try s.send("GET", "/support/bundles", query: "device=\(ana.id)", token: s.office).decoded(SupportBundleList.self)
        #expect(listed.bundles.count == 1)
        #expect(listed.bundles.first?.bundle.answering == request.id && listed.bundles.first?.bundle.items.count == 2)
        #expect(listed.bundles.first?.principal == "ana" && listed.bundles.first?.deviceID == ana.id)
        // A device's own token reads no bundle; another workspace's back office sees none of these.
        #expect(s.send("GET", "/support/bundles", token: ana.token).code == "back-office-only")
        let other = try s.server.issueAccessToken(principal: "office", workspaces: ["globex"], role: .backOffice)
        let theirs = try s.send("GET", "/support/bundles", token: other, workspace: "globex").decoded(SupportBundleList.self)
        #expect(theirs.bundles.isEmpty)
        #expect(
            s.send("POST", "/support/requests", token: other, workspace: "globex", body: s.json(SupportRequestCreate(deviceID: ana.id)))
                .code
                == "no-such-device")
    }

    @Test func whatTheSupportRoutesReadIsBoundedAndRefusedWithAReason() throws {
        let s = try Setup()
        let ana = try Self.device(s, "ana", installation: "install-ana-1")
        for asked in [
            SupportRequestCreate(deviceID: ""), SupportRequestCreate(deviceID: String(repeating: "d", count: 129)),
            SupportRequestCreate(deviceID: "has space"), SupportRequestCreate(deviceID: ana.id, reason: "two\nlines"),
            SupportRequestCreate(deviceID: ana.id, reason: String(repeating: "r", count: 201)),
        ] {
            #expect(s.send("POST", "/support/requests", token: s.office, body: s.json(asked)).code == "malformed", "\(asked)")
        }
        #expect(
            s.send("POST", "/support/requests", token: s.office, body: s.json(SupportRequestCreate(deviceID: "dv-none"))).code
                == "no-such-device")
        for body in ["", "[]", "{", "{\"device_id\": 7}", String(repeating: "[", count: 4000)] {
            #expect(s.send("POST", "/support/requests", token: s.office, body: Data(body.utf8)).code == "malformed", "\(body.prefix(12))")
        }
        for query in ["limit=0", "limit=51", "limit=-1", "limit=abc", "limit=99999999999999999999"] {
            #expect(s.send("GET", "/support/bundles", query: query, token: s.office).code == "bad-limit", "\(query)")
        }
        for query in ["device=%0A", "device=a%20b", "who=x", "device=a&device=b", "%zz=1"] {
            #expect(s.send("GET", "/support/bundles", query: query, token: s.office).code == "bad-query", "\(query)")
        }
        // Bundles that are not one: refused, nothing kept.
        var newer = Self.bundle(answering: nil)
        newer.formsyncBundle = 2
        let bad: [Data] = [
            Data(), Data("[]".utf8), Data("{".utf8), Data(String(repeating: "[", count: 100_000).utf8), s.json(newer),
            s.json(Self.bundle(answering: nil, items: SupportBundle.maxItems + 1)), s.json(Self.bundle(answering: -5)),
            s.json(Self.bundle(answering: nil, name: "line\nbreak")),
            Data((String(decoding: s.json(Self.bundle(answering: nil)), as: UTF8.self)).dropLast().utf8)
                + Data((",\"pad\":\"" + String(repeating: "x", count: SupportBundle.maxBytes) + "\"}").utf8),
        ]
        for body in bad {
            let reply = s.send("POST", "/support/bundles", token: ana.token, body: body)
            #expect(reply.status == 400 && reply.code == "malformed", "\(String(decoding: body.prefix(40), as: UTF8.self))")
        }
        #expect(
            s.send("POST", "/support/bundles", token: ana.token, body: s.json(Self.bundle(answering: 9_000_000_000))).code
                == "no-such-support-request")
        let listed = try s.send("GET", "/support/bundles", token: s.office).decoded(SupportBundleList.self)
        #expect(listed.bundles.isEmpty, "nothing refused was kept")
    }
}
