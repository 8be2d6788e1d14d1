import FormSyncModel
import Foundation

/// How a webhook's delivery is signed, and how a receiver written in Swift checks it
/// (docs/PROTOCOL.md, "Webhooks": the same in Python there). The header
/// `FormSync-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>]` holds one HMAC-SHA256 of
/// `"<t>.<body>"` per secret that signs now (two while a rotated secret is still honoured). The
/// secret itself never travels with a delivery.
public enum WebhookSignature {
    /// The header's value for `body` sent at `timestamp` (unix seconds), signed with each secret.
    public static func header(body: Data, timestamp: Int64, secrets: [String]) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + hex(hmac(key: Data($0.utf8), message: signed(body, timestamp))) })
            .joined(separator: ",")
    }

    /// Whether `header` signs `body` with `secret`, at a time within `tolerance` seconds of
    /// `now` (unix seconds): what a receiver checks before it trusts a delivery. The comparison
    /// takes the same time whatever the bytes.
    public static func verify(header: String, body: Data, secret: String, now: Int64, tolerance: Int64 = 300) -> Bool {
        guard header.utf8.count <= 1024 else { return false }
        var timestamp: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) } else if pair[0] == "v1" { signatures.append(pair[1].lowercased()) }
        }
        guard let timestamp, abs(now.subtractingReportingOverflow(timestamp).partialValue) <= tolerance else { return false }
        let expected = Array(hex(hmac(key: Data(secret.utf8), message: signed(body, timestamp))).utf8)
        return signatures.contains { candidate in
            let bytes = Array(candidate.utf8)
            guard bytes.count == expected.count else { return false }
            return zip(bytes, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }

    /// HMAC-SHA256 (RFC 2104) of `message` under `key`.
    public static func hmac(key: Data, message: Data) -> Data {
        var block = key.count > 64 ? SHA256.hash(key) : key
        block.append(Data(repeating: 0, count: 64 - block.count))
        var inner = SHA256()
        inner.update(Data(block.map { $0 ^ 0x36 }))
        inner.update(message)
        var outer = SHA256()
        outer.update(Data(block.map { $0 ^ 0x5C }))
        outer.update(inner.finalize())
        return outer.finalize()
    }

    static func signed(_ body: Data, _ timestamp: Int64) -> Data {
        var message = Data("\(timestamp).".utf8)
        message.append(body)
        return message
    }

    static func hex(_ bytes: Data) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
