import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The syntax of what the protocol puts in headers, paths and queries (docs/PROTOCOL.md):
/// identifiers, entity tags, `FormSync-Form`, digests, cursors, byte ranges. Every value read
/// here came from the network and is bounded before it is believed.
enum WireSyntax {
    /// What an identifier (`Idempotency-Key`, `FormSync-Document`, `FormSync-Workspace`) is,
    /// in the words a refusal uses (`FormSyncProtocol.Identifier`).
    static var identifierRule: String { Identifier.rule }

    static func isIdentifier(_ value: String?) -> Bool { Identifier.isValid(value) }

    /// `If-Match` (docs/PROTOCOL.md, §1): `*` (nil tags) or a comma-separated list of entity tags,
    /// strong `"x"` or weak `W/"x"`; nil for anything else.
    static func entityTags(_ header: String) -> (any: Bool, strong: [String])? {
        let text = header.trimmingOWS
        if text == "*" { return (true, []) }
        var strong: [String] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            var tag = item.trimmingOWS
            let weak = tag.hasPrefix("W/")
            if weak { tag.removeFirst(2) }
            guard tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\""),
                tag.dropFirst().dropLast().utf8.allSatisfy({ $0 == 0x21 || (0x23...0x7E).contains($0) || $0 >= 0x80 })
            else { return nil }
            if !weak { strong.append(String(tag)) }
        }
        return (false, strong)
    }

    /// The entity tag of a document's or a record's version.
    static func etag(_ version: Int) -> String { "\"\(version)\"" }

    /// `value` as a JSON string, escaped as every stored payload is (`JSONOutput`).
    static func jsonString(_ value: String) -> String {
        var out = JSONOutput(capacity: value.utf8.count + 2)
        out.string(value)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    /// `value` as the bytes of a JSON string.
    static func jsonBytes(_ value: String) -> Data {
        Data(jsonString(value).utf8)
    }

    /// `DeliveryConfirmation; version=3`.
    static func parseForm(_ header: String) -> (String, Int)? {
        let parts = header.split(separator: ";").map(\.trimmingOWS)
        guard parts.count == 2, parts[1].hasPrefix("version="), let version = Int(parts[1].dropFirst("version=".count)) else { return nil }
        return (String(parts[0]), version)
    }

    /// `sha-256=:base64:` (docs/PROTOCOL.md, "Standards").
    static func parseDigest(_ header: String) -> Data? {
        for item in header.split(separator: ",") {
            let text = item.trimmingOWS
            guard text.hasPrefix("sha-256=:"), text.hasSuffix(":"), text.count > 10 else { continue }
            return Data(base64Encoded: String(text.dropFirst("sha-256=:".count).dropLast()))
        }
        return nil
    }

    /// A digest as `Content-Digest` and `Repr-Digest` write it.
    static func digestHeader(_ digest: Data) -> String { "sha-256=:\(digest.base64EncodedString()):" }

    /// Cursors are opaque to devices: `c1.` and a sequence number.
    static func cursor(_ seq: Int64, reviews: Int64 = 0, count: FeedCount? = nil) -> String {
        if let count { return "c3.\(seq).\(reviews).\(count.top).\(count.below)" }
        return reviews == 0 ? "c1.\(seq)" : "c2.\(seq).\(reviews)"
    }

    /// What a page of a long pull counted of the changes after it, carried by its cursor so that
    /// the next page need not count them again: `below` changes up to position `top`.
    struct FeedCount: Equatable {
        var top: Int64
        var below: Int64
    }

    /// The positions a change feed's cursor holds: in the records' changes, and in the reviews
    /// (0 for a cursor from before reviews), and what it counted of the changes after it, if it
    /// did; nil for anything this server did not issue.
    static func parseCursor(_ text: String) -> (changes: Int64, reviews: Int64, count: FeedCount?)? {
        guard text.utf8.count <= 84 else { return nil }
        if text.hasPrefix("c1.") { return number(text.dropFirst(3)).map { ($0, 0, nil) } }
        let three = text.hasPrefix("c3.")
        guard text.hasPrefix("c2.") || three else { return nil }
        let parts = text.dropFirst(3).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == (three ? 4 : 2), let changes = number(parts[0]), let reviews = number(parts[1]) else { return nil }
        guard three else { return (changes, reviews, nil) }
        guard let top = number(parts[2]), let below = number(parts[3]) else { return nil }
        return (changes, reviews, FeedCount(top: top, below: below))
    }

    /// The submissions feed's cursor: a position its own, never mistaken for the change feed's.
    static func submissionsCursor(_ seq: Int64) -> String { "s1.\(seq)" }

    static func parseSubmissionsCursor(_ text: String) -> Int64? {
        guard text.hasPrefix("s1."), text.utf8.count <= 24 else { return nil }
        return number(text.dropFirst(3))
    }

    /// Decimal digits as a number that fits; nil for anything else.
    static func number(_ digits: Substring) -> Int64? {
        guard !digits.isEmpty, digits.utf8.count <= 19, digits.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int64(digits)
    }

    /// An RFC 3339 time (`2026-12-06T10:42:00Z`, fractions of a second and offsets allowed)
    /// as milliseconds since 1970; nil for anything else, or a time outside years 1970 to 9999.
    static func parseTimestamp(_ text: String) -> Int64? {
        guard text.utf8.count <= 40, text.utf8.count >= 20 else { return nil }
        // An offset is ±hh:mm with hh at most 23 and mm at most 59 (a lenient reader takes more).
        let tail = Array(text.utf8.suffix(6))
        if tail[0] == UInt8(ascii: "+") || tail[0] == UInt8(ascii: "-") {
            guard let hours = Int(String(decoding: tail[1...2], as: UTF8.self)), hours <= 23,
                let minutes = Int(String(decoding: tail[4...5], as: UTF8.self)), minutes <= 59
            else { return nil }
        }
        let date = InternetTime.date(text, fractionalSeconds: false) ?? InternetTime.date(text, fractionalSeconds: true)
        guard let seconds = date?.timeIntervalSince1970, seconds >= 0, seconds < 253_402_300_800 else { return nil }
        return Int64((seconds * 1000).rounded(.down))
    }

    /// 64 lower-case hex digits as 32 bytes; nil for anything else.
    static func hexBytes(_ text: Substring) -> Data? {
        guard text.utf8.count == 64 else { return nil }
        var bytes = Data(capacity: 32)
        var high: UInt8?
        for c in text.utf8 {
            let value: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = c - UInt8(ascii: "a") + 10
            default: return nil
            }
            if let h = high {
                bytes.append(h << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return bytes
    }

    /// A query's members, percent-decoded (RFC 3986: a `+` is a plus), each named once; nil for a
    /// malformed query or one over 2 KiB.
    static func queryMembers(_ query: String?) -> [String: String]? {
        guard let query, !query.isEmpty else { return [:] }
        guard query.utf8.count <= 2048 else { return nil }
        var members: [String: String] = [:]
        for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
            guard let equals = pair.firstIndex(of: "="),
                let key = String(pair[..<equals]).removingPercentEncoding,
                let value = String(pair[pair.index(after: equals)...]).removingPercentEncoding,
                members[key] == nil
            else { return nil }
            members[key] = value
        }
        return members
    }

    /// `seconds` in milliseconds; past Int64's range, as far in the future (or past) as it holds.
    static func milliseconds(seconds: Int) -> Int64 {
        let (value, overflow) = Int64(seconds).multipliedReportingOverflow(by: 1000)
        return overflow ? (seconds < 0 ? .min : .max) : value
    }

    /// Milliseconds since 1970 as RFC 3339 UTC.
    static func timestamp(_ milliseconds: Int64) -> String {
        InternetTime.string(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// One range within `total` bytes, as RFC 9110 §14.1.2 reads it: `bytes=<first>-<last>`
    /// (the last clamped to the end, however many digits it has), `bytes=<first>-`, or the
    /// suffix `bytes=-<count>` (the last `count` bytes; all of them when the file is shorter).
    /// Nil when the range cannot be served: several ranges, a malformed one, a first position
    /// at or past the end, an empty suffix, or an empty file.
    static func byteRange(_ header: String, total: Int64) -> (Int64, Int64)? {
        guard header.hasPrefix("bytes="), header.utf8.count <= 128, total > 0 else { return nil }
        let spec = header.dropFirst(6).trimmingOWS
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        /// A position: its value, or Int64.max for one too large to hold (it is past any end).
        func position(_ text: Substring) -> Int64? {
            guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
            return Int64(text) ?? .max
        }
        guard parts.count == 2 else { return nil }
        if parts[0].isEmpty {
            guard let count = position(parts[1]), count > 0 else { return nil }
            return (total - min(count, total), total - 1)
        }
        guard let first = position(parts[0]), first < total else { return nil }
        guard !parts[1].isEmpty else { return (first, total - 1) }
        guard let last = position(parts[1]), last >= first else { return nil }
        return (first, min(last, total - 1))
    }
}
