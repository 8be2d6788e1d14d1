import FormSyncModel
import FormSyncProtocol
import Foundation

/// Reads a page of the change feed (`GET /changes`) in one pass over its bytes. Each record
/// keeps the exact bytes the server sent and is decoded once, by its type, before it is
/// stored. It answers what reading the page as top-level members, then each change as its
/// own members, answers (a member given twice counts once, the last time; `null` counts as
/// absent), without copying each change out of the page or a `JSONDecoder` for each type.
enum ChangeFeedReader {
    /// An object with a `changes` array and a `cursor` string; nil for anything else (a
    /// portal's or a proxy's page).
    struct Feed: Equatable {
        /// The well-formed changes, at most `limit` of them.
        var changes: [RecordChange]
        /// How many changes the page holds, well-formed or not.
        var count: Int
        /// Whether a change is not one the protocol allows.
        var malformed: Bool
        var cursor: String
        var more: Bool
        /// How many changes follow the page, as the server counted them (nil when it did not).
        var remaining: Int? = nil
        /// The support request the server asks this device to answer, if any (an unreadable
        /// one, or one over 4 KiB, counts as none).
        var supportRequest: SupportRequest? = nil
        /// The back office's reviews of the principal's documents (unreadable ones left out).
        var reviews: [Review] = []
    }

    /// The most reviews a page may carry and the most bytes they may take.
    static let maxReviews = 100
    static let maxReviewBytes = 1 << 20

    static func read(_ body: Data, limit: Int) -> Feed? {
        var scanner = JSONScanner(body)
        var changes: [RecordChange]?
        var malformed = false
        var count = 0
        var cursor: String?
        var more = false
        var remaining: Int?
        var supportRequest: SupportRequest?
        var reviews: [Review] = []
        scanner.skipSpace()
        let read = scanner.readObject { key, scanner in
            let valueStart = scanner.index
            switch key {
            case FeedPage.changes:
                guard let list = readChanges(&scanner, limit: limit) else { return false }
                (changes, count, malformed) = (list.changes, list.count, list.malformed)
            case FeedPage.cursor:
                guard scanner.skipValue() else { return false }
                cursor = isNull(scanner, from: valueStart) ? nil : string(scanner, from: valueStart)
            case FeedPage.more:
                guard scanner.skipValue() else { return false }
                more = scanner.bytes[valueStart..<scanner.index].elementsEqual("true".utf8)
            case FeedPage.remaining:
                guard scanner.skipValue() else { return false }
                // Digits only, at most seven of them (the server counts to a million).
                let bytes = scanner.bytes[valueStart..<scanner.index]
                if (1...7).contains(bytes.count), bytes.allSatisfy({ (48...57).contains($0) }) {
                    remaining = Int(String(decoding: bytes, as: UTF8.self))
                }
            case FeedPage.supportRequest:
                guard scanner.skipValue() else { return false }
                let bytes = scanner.bytes[valueStart..<scanner.index]
                supportRequest = bytes.count <= 4096 ? try? JSONDecoder().decode(SupportRequest.self, from: Data(bytes)) : nil
            case FeedPage.reviews:
                guard scanner.skipValue() else { return false }
                let bytes = scanner.bytes[valueStart..<scanner.index]
                if bytes.count <= maxReviewBytes, let list = try? JSONDecoder().decode([Lenient<Review>].self, from: Data(bytes)) {
                    reviews = Array(list.compactMap(\.value).filter { $0.id > 0 && Identifier.isValid($0.documentID) }.prefix(maxReviews))
                }
            default:
                guard scanner.skipValue() else { return false }
            }
            return true
        }
        guard read else { return nil }
        scanner.skipSpace()
        guard scanner.atEnd, let changes, let cursor else { return nil }
        return Feed(
            changes: changes, count: count, malformed: malformed, cursor: cursor, more: more, remaining: more ? remaining : nil,
            supportRequest: supportRequest.flatMap { $0.id > 0 ? $0 : nil }, reviews: reviews)
    }

    /// Reads a compact page (`CompactFeedPage`): its envelope as a JSON page with no changes,
    /// then its frames, each checked as a JSON change is (a change that breaks a rule makes the
    /// page `malformed`; a record's bytes must be an object, which its type's decoding reads in
    /// full before anything is stored). Nil when the bytes are not a compact page.
    static func readCompact(_ body: Data, limit: Int) -> Feed? {
        guard let page = CompactFeedPage.read(body, limit: limit), var feed = read(page.envelope, limit: 0), feed.count == 0 else {
            return nil
        }
        var changes: [RecordChange] = []
        changes.reserveCapacity(page.frames.count)
        var malformed = false
        for frame in page.frames {
            guard (1...128).contains(frame.type.utf8.count), HTTPTransport.serverIDs.contains(frame.id) else {
                malformed = true
                continue
            }
            switch frame.kind {
            case .deleted:
                changes.append(RecordChange(type: frame.type, id: frame.id, version: 0, fields: nil))
            case .outside:
                changes.append(RecordChange(type: frame.type, id: frame.id, version: 0, fields: nil, isOutside: true))
            case .state:
                guard frame.version >= 1, frame.version < Int64(Int32.max), let record = frame.record, record.count >= 2,
                    body[record.lowerBound] == 0x7B, body[record.upperBound - 1] == 0x7D
                else {
                    malformed = true
                    continue
                }
                changes.append(RecordChange(type: frame.type, id: frame.id, version: Int(frame.version), fields: Data(body[record])))
            }
        }
        feed.changes = changes
        feed.count = page.frames.count
        feed.malformed = malformed
        return feed
    }

    /// A value of an array read on its own: one that does not decode is nil, not the array's end.
    struct Lenient<T: Decodable>: Decodable {
        var value: T?
        init(from decoder: any Decoder) throws { value = try? T(from: decoder) }
    }

    /// The array of changes at the scanner; nil when the JSON is not well-formed. A `null`
    /// gives no changes (the member is absent); any other value that is not an array, too.
    private static func readChanges(_ scanner: inout JSONScanner, limit: Int) -> (changes: [RecordChange]?, count: Int, malformed: Bool)? {
        guard scanner.consume(0x5B) else {
            return scanner.skipValue() ? (nil, 0, false) : nil
        }
        var changes: [RecordChange] = []
        var malformed = false
        var count = 0
        scanner.skipSpace()
        if !scanner.consume(0x5D) {
            while true {
                scanner.skipSpace()
                let start = scanner.index
                count += 1
                if let change = readChange(&scanner) {
                    if count <= limit { changes.append(change) }
                } else {
                    malformed = true
                    scanner.index = start
                    guard scanner.skipValue() else { return nil }
                }
                scanner.skipSpace()
                if scanner.consume(0x2C) { continue }
                guard scanner.consume(0x5D) else { return nil }
                break
            }
        }
        return (changes, count, malformed)
    }

    /// One change: a type of 1 to 128 characters, a server id from 1 to 2^53 − 1, and either
    /// `deleted: true` or a version from 1 and fields that are an object. Nil for anything
    /// else, with the scanner anywhere.
    private static func readChange(_ scanner: inout JSONScanner) -> RecordChange? {
        var type: String?
        var id: Int64?
        var version: Int64?
        var deleted = false
        var outside = false
        var record: Range<Int>?
        let read = scanner.readObject { key, scanner in
            let valueStart = scanner.index
            guard scanner.skipValue() else { return false }
            let absent = isNull(scanner, from: valueStart)
            switch key {
            case FeedPage.Change.type: type = absent ? nil : string(scanner, from: valueStart)
            case FeedPage.Change.id: id = absent ? nil : wholeNumber(scanner.bytes[valueStart..<scanner.index])
            case FeedPage.Change.version: version = absent ? nil : wholeNumber(scanner.bytes[valueStart..<scanner.index])
            case FeedPage.Change.deleted: deleted = scanner.bytes[valueStart..<scanner.index].elementsEqual("true".utf8)
            case FeedPage.Change.outside: outside = scanner.bytes[valueStart..<scanner.index].elementsEqual("true".utf8)
            case FeedPage.Change.record: record = absent ? nil : valueStart..<scanner.index
            default: break
            }
            return true
        }
        guard read else { return nil }
        guard let type, (1...128).contains(type.utf8.count), let id, HTTPTransport.serverIDs.contains(id) else { return nil }
        if deleted { return RecordChange(type: type, id: id, version: 0, fields: nil) }
        if outside { return RecordChange(type: type, id: id, version: 0, fields: nil, isOutside: true) }
        guard let version, version >= 1, version < Int64(Int32.max), let record, scanner.bytes[record.lowerBound] == 0x7B else {
            return nil
        }
        return RecordChange(type: type, id: id, version: Int(version), fields: Data(scanner.bytes[record]))
    }

    private static func isNull(_ scanner: JSONScanner, from start: Int) -> Bool {
        scanner.bytes[start..<scanner.index].elementsEqual("null".utf8)
    }

    /// The string value just skipped, or nil when the value is not a string.
    private static func string(_ scanner: JSONScanner, from start: Int) -> String? {
        guard scanner.bytes[start] == 0x22 else { return nil }
        return scanner.string(from: start)
    }

    /// A JSON integer written as plain digits (no sign, fraction or exponent), at most 16 digits.
    static func wholeNumber(_ digits: some Collection<UInt8>) -> Int64? {
        guard (1...16).contains(digits.count) else { return nil }
        var value: Int64 = 0
        for digit in digits {
            guard (0x30...0x39).contains(digit) else { return nil }
            value = value * 10 + Int64(digit - 0x30)
        }
        return value
    }
}
