import FormSyncModel
import FormSyncProtocol
import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncClient

/// The one-pass reader of the change feed answers what reading the page member by member
/// answers (the reading it replaced, kept here as the reference), on well-formed pages and on
/// hostile ones: duplicate and `null` members, escapes, control characters, wrong types,
/// truncated and corrupted text.
struct ChangeFeedReaderTests {
    /// The page read as top-level members, then each change as its own members.
    static func reference(_ body: Data) -> PullOutcome {
        guard let page = JSONObjectSlices(body), let list = page["changes"], let items = JSONObjectSlices.elements(ofArray: list),
            let cursorBytes = page["cursor"], let cursor = try? JSONDecoder().decode(String.self, from: cursorBytes)
        else { return .unreachable(reason: "HTTP 200 that is not a change feed (a captive portal or proxy?)") }
        guard !cursor.isEmpty, cursor.utf8.count <= 256, cursor.utf8.allSatisfy({ (0x21...0x7E).contains($0) }),
            items.count <= HTTPTransport.maxChangesPerPage
        else {
            return .failed(reason: "the change feed's page is malformed (cursor or size)", retryAfter: nil)
        }
        var changes: [RecordChange] = []
        for item in items {
            guard let object = JSONObjectSlices(item), let change = change(object) else {
                return .failed(reason: "the change feed holds a malformed change", retryAfter: nil)
            }
            changes.append(change)
        }
        return .page(ChangePage(changes: changes, cursor: cursor, more: page["more"] == Data("true".utf8)))
    }

    static func change(_ object: JSONObjectSlices) -> RecordChange? {
        guard let typeBytes = object["type"], let type = try? JSONDecoder().decode(String.self, from: typeBytes),
            (1...128).contains(type.utf8.count),
            let id = HTTPTransport.wholeNumber(object["id"]), HTTPTransport.serverIDs.contains(id)
        else { return nil }
        if object["deleted"] == Data("true".utf8) { return RecordChange(type: type, id: id, version: 0, fields: nil) }
        guard let version = HTTPTransport.wholeNumber(object["version"]), version >= 1, version < Int64(Int32.max),
            let fields = object["record"], fields.first == 0x7B
        else { return nil }
        return RecordChange(type: type, id: id, version: Int(version), fields: fields)
    }

    static func read(_ text: String) -> PullOutcome {
        HTTPTransport.classifyPage(status: 200, headers: ["content-type": "application/json"], body: Data(text.utf8))
    }

    @Test func aWellFormedPageKeepsEachRecordsExactBytes() {
        let text =
            #"{ "more" : true, "changes" : [ {"type":"Delivery","id":7,"version":2,"record":{"b": 1.50, "a":"x"}} , {"type":"Delivery","id":8,"deleted":true} ], "cursor":"c-9" }"#
        let expected = ChangePage(
            changes: [
                RecordChange(type: "Delivery", id: 7, version: 2, fields: Data(#"{"b": 1.50, "a":"x"}"#.utf8)),
                RecordChange(type: "Delivery", id: 8, version: 0, fields: nil),
            ], cursor: "c-9", more: true)
        #expect(Self.read(text) == .page(expected))
    }

    /// A page carrying the back office's support request gives it to the pull; one that is not a
    /// request (a wrong type, an id that cannot be one, more than 4 KiB) counts as none, and the
    /// page is read all the same.
    @Test func aSupportRequestIsReadFromThePageAndAnAbsurdOneIsNone() {
        func request(_ member: String) -> Int64? {
            guard case .page(let page) = Self.read(#"{"changes":[],"cursor":"c-1","more":false,"support_request":"# + member + "}")
            else { return -1 }
            return page.supportRequest?.id
        }
        #expect(request(#"{"id":12,"device_id":"dv-1","reason":"stuck","requested_at":"2026-12-06T10:00:00Z"}"#) == 12)
        #expect(request(#"{"id":0,"device_id":"dv-1","reason":"r","requested_at":"t"}"#) == nil)
        #expect(request(#"{"id":-4,"device_id":"dv-1","reason":"r","requested_at":"t"}"#) == nil)
        #expect(request(#"{"id":"12","device_id":"dv-1","reason":"r","requested_at":"t"}"#) == nil)
        #expect(request(#"{"id":99999999999999999999999,"device_id":"dv-1","reason":"r","requested_at":"t"}"#) == nil)
        #expect(request("[1,2]") == nil)
        #expect(request("null") == nil)
        let long = String(repeating: "x", count: 5000)
        #expect(request(#"{"id":12,"device_id":"dv-1","reason":""# + long + #"","requested_at":"t"}"#) == nil)
    }

    @Test func membersGivenTwiceCountTheLastTimeAndNullCountsAsAbsent() {
        #expect(
            Self.read(#"{"changes":[{"type":"A","id":1,"deleted":true}],"cursor":"c1","changes":[]}"#)
                == .page(ChangePage(changes: [], cursor: "c1", more: false)))
        #expect(
            Self.read(#"{"changes":[],"cursor":"c1","more":true,"more":null}"#) == .page(ChangePage(changes: [], cursor: "c1", more: false))
        )
        #expect(
            Self.read(#"{"changes":[{"type":"A","id":1,"id":2,"deleted":true,"deleted":null,"version":3,"record":{}}],"cursor":"c1"}"#)
                == .page(
                    ChangePage(changes: [RecordChange(type: "A", id: 2, version: 3, fields: Data("{}".utf8))], cursor: "c1", more: false)))
        if case .unreachable = Self.read(#"{"changes":[],"cursor":"c1","cursor":null}"#) {
        } else {
            Issue.record("a cursor given as null is no cursor")
        }
    }

    @Test func escapedTypesAreDecodedAndControlCharactersRefused() {
        #expect(
            Self.read(#"{"changes":[{"type":"Deli\u0076ery","id":1,"deleted":true}],"cursor":"c1"}"#)
                == .page(ChangePage(changes: [RecordChange(type: "Delivery", id: 1, version: 0, fields: nil)], cursor: "c1", more: false)))
        if case .failed = Self.read("{\"changes\":[{\"type\":\"A\u{1}B\",\"id\":1,\"deleted\":true}],\"cursor\":\"c1\"}") {
        } else {
            Issue.record("a raw control character in a type is not JSON")
        }
    }

    @Test func aTypeOfInvalidUTF8IsRefusedAndOneBeyondASCIIIsRead() {
        func page(_ type: [UInt8]) -> PullOutcome {
            let body = Data(#"{"changes":[{"type":""#.utf8) + type + Data(#"","id":1,"deleted":true}],"cursor":"c1"}"#.utf8)
            return HTTPTransport.classifyPage(status: 200, headers: ["content-type": "application/json"], body: body)
        }
        for invalid: [UInt8] in [[0x41, 0xFF, 0x42], [0x41, 0xC3], [0xED, 0xA0, 0x80]] {
            if case .page = page(invalid) { Issue.record("\(invalid) is not UTF-8") }
            #expect(
                page(invalid)
                    == Self.reference(
                        Data(#"{"changes":[{"type":""#.utf8) + invalid + Data(#"","id":1,"deleted":true}],"cursor":"c1"}"#.utf8)))
        }
        #expect(
            page(Array("Größe".utf8))
                == .page(ChangePage(changes: [RecordChange(type: "Größe", id: 1, version: 0, fields: nil)], cursor: "c1", more: false)))
    }

    @Test func aPageOfMoreChangesThanTheLimitIsRefusedWithoutKeepingThem() async {
        await OffThePool.run {
            let one = #"{"type":"A","id":1,"deleted":true}"#
            let text =
                #"{"cursor":"c1","changes":["# + Array(repeating: one, count: HTTPTransport.maxChangesPerPage + 1).joined(separator: ",")
                + "]}"
            #expect(
                ChangeFeedReader.read(Data(text.utf8), limit: HTTPTransport.maxChangesPerPage)?.changes.count
                    == HTTPTransport.maxChangesPerPage
            )
            #expect(Self.read(text) == .failed(reason: "the change feed's page is malformed (cursor or size)", retryAfter: nil))
        }
    }

    @Test(arguments: 0..<4)
    func theOnePassReaderAgreesWithTheMemberByMemberReadingOnHostilePages(batch: Int) {
        var random = SplitMix64(state: UInt64(batch) &* 0x9E37_79B9_7F4A_7C15 &+ 11)
        var disagreements: [String] = []
        var pages = 0
        var refused = 0
        var notFeeds = 0
        for _ in 0..<1500 {
            var text = Self.page(&random)
            switch random.next() % 4 {
            case 0:
                let cut = Int(random.next() % UInt64(text.utf8.count + 1))
                text = String(decoding: Array(text.utf8.prefix(cut)), as: UTF8.self)
            case 1:
                var bytes = Array(text.utf8)
                if !bytes.isEmpty {
                    let at = Int(random.next() % UInt64(bytes.count))
                    bytes[at] = Array(#"{}[],:" 0-1e\n"#.utf8)[Int(random.next() % 14)]
                }
                text = String(decoding: bytes, as: UTF8.self)
            default: break
            }
            let body = Data(text.utf8)
            let read = HTTPTransport.classifyPage(status: 200, headers: ["content-type": "application/json"], body: body)
            if read != Self.reference(body) { disagreements.append(text) }
            switch read {
            case .page(let page): pages += page.changes.isEmpty ? 0 : 1
            case .failed: refused += 1
            default: notFeeds += 1
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(3))")
        #expect(
            [pages, refused, notFeeds].allSatisfy { $0 > 50 },
            "the pages reach every outcome: \(pages) with changes, \(refused) refused, \(notFeeds) no feed")
    }

    /// A page as a server, a portal or a broken proxy might write it.
    static func page(_ random: inout SplitMix64) -> String {
        func pick<T>(_ options: [T]) -> T { options[Int(random.next() % UInt64(options.count))] }
        /// Mostly one of `good`, sometimes one of `bad`: most pages then hold only good changes.
        func pick(_ good: [String], else bad: [String]) -> String { random.next() % 10 < 9 ? pick(good) : pick(bad) }
        func space() -> String { pick(["", "", " ", "\n  ", "\t"]) }
        var changes: [String] = []
        for _ in 0..<Int(random.next() % 4) {
            var members: [String] = []
            members.append(
                #""type":"#
                    + pick(
                        [#""Delivery""#, #""Site""#, #""Deli\u0076ery""#, #""\u00e9t\u00e9""#],
                        else: [#""""#, "\"A\u{1}\"", "7", "null", "\"" + String(repeating: "x", count: 129) + "\""]))
            members.append(
                #""id":"#
                    + pick(
                        ["1", "42", "9007199254740991", "007"],
                        else: ["-4", "0", "1e3", "9007199254740992", "12345678901234567", "\"5\"", "null", "3.0"]))
            switch random.next() % 3 {
            case 0: members.append(#""deleted":"# + pick(["true", "false", "null", "\"true\"", "1", "trueish"]))
            default:
                members.append(#""version":"# + pick(["1", "2", "2147483646"], else: ["0", "2147483647", "-1", "null", "\"3\""]))
                members.append(
                    #""record":"#
                        + pick([#"{"status":"assigned"}"#, "{}", #"{"a":[1,{"b":null}]}"#], else: ["[1]", "null", #""{}""#, "7"]))
            }
            if random.next() % 3 == 0 {
                members.append(pick([#""extra":[1,2]"#, #""id":5"#, #""record":null"#, #""type":"Site""#, #""deleted":true"#]))
            }
            if random.next() % 2 == 0 { members.reverse() }
            if random.next() % 4 == 0 { members.swapAt(0, members.count - 1) }
            changes.append(pick(["{", "{ "]) + members.joined(separator: "," + space()) + space() + "}")
        }
        if random.next() % 12 == 0 { changes.append(pick(["null", "[]", "\"x\"", "12"])) }
        var top: [String] = [
            #""changes":"# + space() + "[" + changes.joined(separator: "," + space()) + "]",
            #""cursor":"#
                + pick(
                    [#""c1""#, #""c\u0032""#], else: [#""""#, "null", "7", #""c 1""#, "\"" + String(repeating: "c", count: 257) + "\""]),
            #""more":"# + pick(["true", "false", "null", "\"true\"", "truer"]),
        ]
        if random.next() % 4 == 0 {
            top.append(pick([#""changes":null"#, #""cursor":"c2""#, #""more":true"#, #""note":{"x":[]}"#, #""changes":{}"#]))
        }
        if random.next() % 2 == 0 { top.shuffle(using: &random) }
        if random.next() % 8 == 0 { top.removeFirst() }
        return space() + "{" + space() + top.joined(separator: "," + space()) + space() + "}" + space()
    }

    /// Issue 46: a page's reviews come from the network. One that does not read as a review, has
    /// no id or no document id the protocol allows, is left out without losing the others; a
    /// page carries at most 100, and a member over 1 MiB, or not an array, gives none.
    @Test func aPagesReviewsAreReadLenientlyAndBounded() throws {
        func review(_ id: Int, document: String = "d-1") -> String {
            #"{"id":\#(id),"document_id":"\#(document)","version":1,"verdict":"has-issues","comment":"x","issues":[],"reviewer":"s","at":"2026-12-06T10:00:00Z"}"#
        }
        func reviews(_ member: String) -> [Int64]? {
            ChangeFeedReader.read(Data(#"{"changes":[],"cursor":"c2.0.9","more":false,"reviews":\#(member)}"#.utf8), limit: 10)?.reviews
                .map(\.id)
        }
        let mixed = [
            review(1), "42", #"{"id":2}"#, review(0), review(3, document: "has space"), review(4), "null",
            #"{"id":5,"document_id":"d","version":"one"}"#, review(6),
        ]
        #expect(reviews("[" + mixed.joined(separator: ",") + "]") == [1, 4, 6])
        #expect(reviews("[" + (1...150).map { review($0) }.joined(separator: ",") + "]")?.count == 100)
        #expect(reviews(#"{"id":1}"#) == [])
        #expect(reviews(#""reviews""#) == [])
        let huge = review(7).replacingOccurrences(of: #""comment":"x""#, with: #""comment":"\#(String(repeating: "x", count: 1 << 20))""#)
        #expect(reviews("[" + huge + "]") == [])
        #expect(ChangeFeedReader.read(Data(#"{"changes":[],"cursor":"c1.0","more":false,"reviews":[{"#.utf8), limit: 10) == nil)
    }

    @Test func aHostileRemainingOrCreatedRecordsIsBoundedOrLeftOut() {
        for (text, expected) in [
            ("7", 7), ("1000000", 1_000_000), ("99999999999999999999", nil), ("-3", nil), ("1e9", nil), ("\"12\"", nil), ("null", nil),
        ] as [(String, Int?)] {
            let page = #"{"changes":[],"cursor":"c1.1","more":true,"remaining":"# + text + "}"
            #expect(ChangeFeedReader.read(Data(page.utf8), limit: 10)?.remaining == expected, "remaining \(text)")
        }
        let quiet = #"{"changes":[],"cursor":"c1.1","more":false,"remaining":5}"#
        #expect(ChangeFeedReader.read(Data(quiet.utf8), limit: 10)?.remaining == nil, "no remaining without more")

        let good: [String: Any] = ["list": "findings", "index": 1, "type": "Finding", "id": 41, "version": 1, "record": ["title": "x"]]
        var entries: [Any] = [
            good, "not an object", ["list": "findings", "index": -1, "type": "Finding", "id": 42, "version": 1, "record": [:]],
        ]
        entries.append(["list": "findings", "index": 1e300, "type": "Finding", "id": 43, "version": 1, "record": [:]] as [String: Any])
        entries.append(["list": "findings", "index": 2, "type": "Finding", "id": 9.1e15, "version": 1, "record": [:]] as [String: Any])
        entries.append(["list": String(repeating: "l", count: 200), "index": 3, "type": "Finding", "id": 44, "version": 1, "record": [:]])
        let read = HTTPTransport.createdRecords(entries)
        #expect(read.map(\.record.id) == [41] && read.first?.index == 1 && read.first?.list == "findings")
        #expect(HTTPTransport.createdRecords(Array(repeating: good, count: 20_000)).count == 10_000, "at most 10,000")
        #expect(HTTPTransport.createdRecords("not a list").isEmpty)
    }
}

/// A compact page (`CompactFeedPage`) is read into the same page as its JSON form, each change
/// checked by the same rules; one that is not a compact page is a failure of the server, not a
/// portal's page.
struct CompactChangeFeedReaderTests {
    static func classify(_ body: Data) -> PullOutcome {
        HTTPTransport.classifyPage(status: 200, headers: ["content-type": CompactFeedPage.mediaType], body: body)
    }

    static func page(count: Int? = nil, _ frames: (inout CompactFeedPage.Writer) -> Void, frameCount: Int) -> Data {
        let envelope = Data(#"{"changes":[],"cursor":"c-9","more":true,"remaining":12}"#.utf8)
        var writer = CompactFeedPage.Writer(envelope: envelope, count: count ?? frameCount)
        frames(&writer)
        return writer.body
    }

    @Test func aCompactPageReadsAsItsJSONFormWithEachRecordsExactBytes() {
        let body = Self.page(
            {
                $0.append(kind: .state, type: "Delivery", id: 7, version: 2, record: Data(#"{"b": 1.50, "a":"x"}"#.utf8))
                $0.append(kind: .deleted, type: "Delivery", id: 8)
            }, frameCount: 2)
        let json = HTTPTransport.classifyPage(
            status: 200, headers: ["content-type": "application/json"],
            body: Data(
                #"{"changes":[{"type":"Delivery","id":7,"version":2,"record":{"b": 1.50, "a":"x"}},{"type":"Delivery","id":8,"deleted":true}],"cursor":"c-9","more":true,"remaining":12}"#
                    .utf8))
        #expect(Self.classify(body) == json)
        guard case .page(let page) = Self.classify(body) else {
            Issue.record("not a page")
            return
        }
        #expect(page.changes.count == 2 && page.remaining == 12)
    }

    /// An id out of range, a version of 0, a record that is not an object: the page is
    /// malformed, as its JSON form would be.
    @Test(arguments: [
        (Int64(0), 1, #"{"a":1}"#), (Int64(1) << 53, 1, #"{"a":1}"#), (7, 0, #"{"a":1}"#), (7, 1, #"[1]"#), (7, 1, ""),
    ])
    func aChangeThatBreaksARuleMakesThePageMalformed(id: Int64, version: Int, record: String) {
        let body = Self.page(
            { $0.append(kind: .state, type: "Delivery", id: id, version: version, record: Data(record.utf8)) }, frameCount: 1)
        #expect(Self.classify(body) == .failed(reason: "the change feed holds a malformed change", retryAfter: nil))
    }

    @Test func bytesThatAreNotACompactPageAreAFailureOfTheServer() {
        let whole = Self.page({ $0.append(kind: .deleted, type: "Delivery", id: 8) }, frameCount: 1)
        for body in [
            whole.dropLast(), Data("<html>portal</html>".utf8),
            Self.page(count: 2, { $0.append(kind: .deleted, type: "D", id: 8) }, frameCount: 1),
        ] {
            #expect(Self.classify(Data(body)) == .failed(reason: "the change feed's compact page is malformed", retryAfter: nil))
        }
        // An envelope that already holds changes is not one either.
        var writer = CompactFeedPage.Writer(
            envelope: Data(#"{"changes":[{"type":"D","id":1,"deleted":true}],"cursor":"c"}"#.utf8), count: 0)
        #expect(Self.classify(writer.body) == .failed(reason: "the change feed's compact page is malformed", retryAfter: nil))
        writer = CompactFeedPage.Writer(envelope: Data(#"{"changes":[],"cursor":"c"}"#.utf8), count: 0)
        #expect(Self.classify(writer.body) == .page(ChangePage(changes: [], cursor: "c", more: false)))
    }
}
