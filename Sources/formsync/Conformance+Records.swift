import FormSpec
import FormSyncCommandLine
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The checks of records: the change feed, one record, and forms that edit a record
/// (docs/PROTOCOL.md §2, "Records and the change feed", "Forms that create or edit a record").
extension Conformance {
    /// The feed's own rules, which need no record of ours.
    mutating func feedChecks() async {
        let badLimit = await send("GET", "/changes?limit=0")
        check(Rules.badLimit, badLimit.status == 400, Self.describe(badLimit))
        let bigLimit = await send("GET", "/changes?limit=100000")
        check(Rules.bigLimit, bigLimit.status == 200 && bigLimit.json?[FeedPage.changes] is [Any], Self.describe(bigLimit))
        let badCursor = await send("GET", "/changes?cursor=not-a-cursor-\(run)")
        check(Rules.badCursor, badCursor.status == 400 || badCursor.status == 410, Self.describe(badCursor))
        problem(badCursor, "a bad cursor")
        let missingRecord = await send("GET", "/records/\(records.keys.sorted().first ?? "Customer")/9007199254740000")
        check(Rules.recordMissing, missingRecord.status == 404, Self.describe(missingRecord))
        let feed = await readFeed(from: nil)
        // A cursor ahead of the feed: the server's own last cursor with its number raised, when
        // it ends in one (cursors are opaque; a server whose cursors do not is not checked).
        if let cursor = feed?.cursor, let digits = cursor.reversed().prefix(while: \.isNumber).reversed() as [Character]?, !digits.isEmpty,
            let number = Int64(String(digits)), number < Int64.max / 2
        {
            let ahead = String(cursor.dropLast(digits.count)) + String(number + 1_000_000_000)
            let reply = await send(
                "GET", "/changes?cursor=" + (ahead.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ahead))
            check(
                Rules.cursorAhead, reply.status == 410 && reply.code == .cursorExpired, Self.describe(reply),
                about: "cursor \(ahead.prefix(40))")
        } else {
            notChecked(Rules.cursorAhead, "the server's cursors do not end in a number this check could raise")
        }
    }

    /// A record scoped to the suite's principal (one the feed gives it, of a type with a
    /// `scope:`) is in no other principal's feed, and `GET /records` is 404 for it.
    mutating func scopeChecks() async {
        guard let otherToken else {
            notChecked(Rules.feedScope, "give --other-token (another principal of the workspace)")
            return
        }
        let scoped = Set(records.values.filter { $0.scope != nil }.map(\.name))
        let mine = await readFeed(from: nil)
        guard
            let record = mine?.changes.first(where: { change in
                guard let type = change[FeedPage.Change.type] as? String, scoped.contains(type),
                    change[FeedPage.Change.deleted] as? Bool != true,
                    let fields = change["record"] as? [String: Any], let scope = records[type]?.scope, let value = fields[scope] as? String
                else { return false }
                return !value.isEmpty
            }), let type = record["type"] as? String, let id = (record["id"] as? NSNumber)?.int64Value
        else {
            notChecked(Rules.feedScope, "the feed holds no record scoped to the suite's principal (a back office assigns them)")
            return
        }
        let theirs = await readFeed(from: nil, as: otherToken)?.changes ?? []
        let leaked = theirs.contains {
            $0[FeedPage.Change.type] as? String == type && ($0[FeedPage.Change.id] as? NSNumber)?.int64Value == id
                && $0[FeedPage.Change.deleted] as? Bool != true
        }
        let one = await send("GET", "/records/\(type)/\(id)", as: otherToken)
        check(
            Rules.feedScope, !leaked && one.status == 404,
            leaked ? "another principal's feed holds \(type) \(id)" : "GET /records as another principal: \(Self.describe(one))",
            about: "\(type) \(id)")
    }

    mutating func recordChecks(_ held: Held) async {
        let feed = await readFeed(from: nil)

        guard held.form.binding?.action == .creates, let type = held.form.binding?.record else {
            print("note  \(held.form.name) creates no record: the records checks need a form that does")
            return
        }
        let listed = feed?.changes.last {
            $0[FeedPage.Change.type] as? String == type && ($0[FeedPage.Change.id] as? NSNumber)?.int64Value == held.id
        }
        check(
            Rules.feedCarries, (listed?["version"] as? NSNumber)?.intValue ?? 0 >= 1 && listed?["record"] is [String: Any],
            feed == nil ? "not a feed" : "\(type) \(held.id) \(listed == nil ? "missing" : "without its version or fields")")
        let one = await send("GET", "/records/\(type)/\(held.id)")
        let etag = one.headers["etag"]
        check(Rules.recordAnswers, one.status == 200 && etag != nil && one.json?["record"] is [String: Any], Self.describe(one))

        guard let editForm = forms.first(where: { $0.binding?.action == .edits && $0.binding?.record == type }), let key = editForm.entity
        else {
            notChecked(Rules.editRecord, "no form of the specs edits a \(type)")
            return
        }
        samples.recordIDs[type] = held.id
        let (first, problem) = await sample(editForm, variant: 3)
        let (second, _) = await sample(editForm, variant: 4)
        guard let first, let second, (first[key] as? Int64) == held.id || (first[key] as? Int) == Int(held.id) else {
            print("note  no valid \(editForm.name) could be made: \(problem ?? "its key does not name the record")")
            return
        }
        let noBase = await submit(editForm, first, document: id("edit0"), key: id("r20"))
        check(Rules.editNoIfMatch, noBase.status == 428, Self.describe(noBase))
        let applied = await submit(editForm, first, document: id("edit1"), key: id("r21"), ifMatch: etag)
        let entity = applied.json?["entity"] as? [String: Any]
        check(
            Rules.editRecord,
            Self.acknowledges(applied, document: id("edit1")) && applied.headers["etag"] != etag && entity?["record"] is [String: Any],
            "\(Self.describe(applied)), ETag \(applied.headers["etag"] ?? "missing") after \(etag ?? "missing")")
        let refused = await submit(editForm, second, document: id("edit2"), key: id("r22"), ifMatch: etag)
        check(
            Rules.editRecordStale,
            refused.status == 412 && refused.json?["record"] is [String: Any] && refused.headers["etag"] == applied.headers["etag"],
            Self.describe(refused))
        var ghost = first
        ghost[key] = 9_007_199_254_740_000
        let missing = await submit(editForm, ghost, document: id("edit3"), key: id("r23"), ifMatch: "\"1\"")
        check(Rules.editRecordMissing, missing.status == 404, Self.describe(missing))

        let after = await readFeed(from: feed?.cursor)
        let changed =
            after?.changes.filter {
                $0[FeedPage.Change.type] as? String == type && ($0[FeedPage.Change.id] as? NSNumber)?.int64Value == held.id
            } ?? []
        check(
            Rules.feedResumes,
            changed.count == 1
                && (changed.first?["version"] as? NSNumber)?.intValue == (listed?["version"] as? NSNumber).map { $0.intValue + 1 },
            after == nil ? "not a feed" : "\(changed.count) entries for \(type) \(held.id)")
    }
}
