import Foundation

/// A reply as the idempotency ledger keeps it: status, headers and body, and nothing of the
/// transport's types, so a store records it and hands it back without knowing HTTP.
package struct RecordedReply: Sendable {
    package var status: Int
    package var headers: [(String, String)]
    package var body: Data

    package init(status: Int, headers: [(String, String)], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The headers as a store keeps them: one `name:value` per line.
    package var headerLines: String { headers.map { "\($0.0):\($0.1)" }.joined(separator: "\n") }

    /// A reply read back from a store, its headers as `headerLines` wrote them.
    package init(status: Int, headerLines: String, body: Data) {
        self.init(
            status: status,
            headers: headerLines.split(separator: "\n").compactMap { line -> (String, String)? in
                let parts = line.split(separator: ":", maxSplits: 1).map(String.init)
                return parts.count == 2 ? (parts[0], parts[1]) : nil
            }, body: body)
    }
}
