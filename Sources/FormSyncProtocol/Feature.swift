/// The optional parts of the protocol a server may implement, as `GET /health` lists them in
/// `features` and every reply names them in `FormSync-Features` (docs/PROTOCOL.md, "GET /health").
public enum Feature: String, Sendable, CaseIterable {
    /// Submissions may name files by digest before their bytes arrive ("Deferred files").
    case deferredFiles = "deferred-files"
    /// `GET /files/sha-256/<hex>` answers ("Looking a file up by digest").
    case fileLookup = "file-lookup"
    /// `GET /changes?wait=<seconds>` holds an empty page until a change the caller may see
    /// commits, or the wait ends ("Waiting for changes").
    case waitForChanges = "wait-for-changes"
    /// `GET /changes?subscription=` serves one subscription's records of a type that reaches
    /// devices only through subscriptions ("Subscriptions").
    case subscriptions = "subscription-feeds"
    /// `GET /changes` answers a device that accepts it with compact pages of up to 10,000
    /// changes (`CompactFeedPage`, "Compact pages").
    case compactFeed = "compact-feed"

    /// The features a `FormSync-Features` header or a `features` list names (unknown names are
    /// left out: a newer server's features mean nothing to an older client).
    public static func named(_ names: some Sequence<some StringProtocol>) -> Set<Feature> {
        Set(names.compactMap { Feature(rawValue: $0.trimmingWhitespace) })
    }
}

extension StringProtocol {
    fileprivate var trimmingWhitespace: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
