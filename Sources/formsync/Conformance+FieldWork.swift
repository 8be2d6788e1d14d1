import FormSpec
import FormSyncProtocol
import Foundation

/// The field's side of the loop (docs/PROTOCOL.md, "Several records from one submission",
/// "Forms that delete a record", "Waiting for changes"): a list's records made with their
/// document and named in the reply, a delete applied once under `If-Match`, and a pull held until
/// a change.
extension Conformance {
    mutating func fieldWorkChecks(features: [String]) async {
        let created = await listRecordChecks()
        await deleteChecks(created: created)
        await waitChecks(features: features)
        await subscriptionChecks(features: features)
        await compactFeedChecks(features: features)
    }

    /// A server that lists `compact-feed`: the feed's first page asked for in the compact form is
    /// one, holding the JSON page's changes (each record the same JSON object), cursor and
    /// `more`; a limit above 1,000 is served.
    mutating func compactFeedChecks(features: [String]) async {
        guard features.contains(Feature.compactFeed.rawValue) else {
            notChecked(Rules.compactFeed, "the server does not list \(Feature.compactFeed.rawValue)")
            return
        }
        let accept = ["Accept": CompactFeedPage.mediaType]
        let json = await send("GET", "/changes?limit=50")
        let compact = await send("GET", "/changes?limit=50", headers: accept)
        let large = await send("GET", "/changes?limit=20000", headers: accept)
        let page = CompactFeedPage.read(compact.data, limit: CompactFeedPage.maxChanges)
        let envelope = page.flatMap { try? JSONSerialization.jsonObject(with: $0.envelope) as? [String: Any] }
        let changes = json.json?[FeedPage.changes] as? [[String: Any]] ?? []
        var same = page?.frames.count == changes.count
        for (frame, change) in zip(page?.frames ?? [], changes) {
            let kind: CompactFeedPage.Kind =
                change[FeedPage.Change.deleted] as? Bool == true
                ? .deleted : change[FeedPage.Change.outside] as? Bool == true ? .outside : .state
            let record = frame.record.flatMap { try? JSONSerialization.jsonObject(with: compact.data[$0]) as? NSDictionary }
            same =
                same && frame.kind == kind && frame.type == change[FeedPage.Change.type] as? String
                && frame.id == (change[FeedPage.Change.id] as? NSNumber)?.int64Value
                && (kind != .state
                    || (Int(frame.version) == change[FeedPage.Change.version] as? Int
                        && record != nil && record == (change[FeedPage.Change.record] as? NSDictionary)))
        }
        let sameEnd =
            envelope?[FeedPage.cursor] as? String == json.json?[FeedPage.cursor] as? String
            && envelope?[FeedPage.more] as? Bool == json.json?[FeedPage.more] as? Bool
        let compactType = compact.headers["content-type"]?.lowercased().hasPrefix(CompactFeedPage.mediaType) == true
        let largeRead = CompactFeedPage.read(large.data, limit: CompactFeedPage.maxChanges) != nil
        check(
            Rules.compactFeed,
            json.status == 200 && compact.status == 200 && compactType && page != nil && same && sameEnd && large.status == 200
                && largeRead,
            "JSON HTTP \(json.status) with \(changes.count) change(s); compact HTTP \(compact.status), content type \(compact.headers["content-type"] ?? "none"), \(page.map { "\($0.frames.count) frame(s)" } ?? "not a compact page"), \(same ? "the same changes" : "not the same changes"), \(sameEnd ? "the same cursor and more" : "another cursor or more"); limit=20000 HTTP \(large.status)\(largeRead ? "" : ", not a compact page")"
        )
    }

    /// Submits a form whose list creates records, with two items; the records it made, by type.
    mutating func listRecordChecks() async -> [(type: String, id: Int64)] {
        guard
            let (form, list) = forms.lazy.compactMap({ form -> (FormDefinition, FieldDefinition)? in
                guard form.binding?.action != .edits, form.binding?.action != .deletes,
                    let list = form.fields.first(where: { if case .list(let l) = $0.kind { return l.creates != nil } else { return false } }
                    )
                else { return nil }
                return (form, list)
            }).first
        else {
            notChecked(Rules.listRecords, "no form of the specs has a list that creates records")
            return []
        }
        let (made, problem) = await sample(form, variant: 5, including: [list.name])
        guard var object = made, let items = object[list.name] as? [[String: Any]], let item = items.first else {
            notChecked(Rules.listRecords, "no valid \(form.name) could be made: \(problem ?? "its list holds no item")")
            return []
        }
        object[list.name] = [item, item]
        let document = id("list-records")
        let reply = await submit(form, object, document: document, key: id("list-records-1"))
        let entries = (reply.json?[Acknowledgement.createdRecords] as? [[String: Any]]) ?? []
        let records = entries.compactMap { entry -> (type: String, id: Int64, index: Int)? in
            guard entry[Acknowledgement.list] as? String == list.name, let index = (entry[Acknowledgement.position] as? NSNumber)?.intValue,
                let type = entry["type"] as? String, let recordID = (entry["id"] as? NSNumber)?.int64Value, recordID > 0,
                entry["record"] is [String: Any]
            else { return nil }
            return (type, recordID, index)
        }
        let again = await submit(form, object, document: document, key: id("list-records-2"))
        let repeated = ((again.json?[Acknowledgement.createdRecords] as? [[String: Any]]) ?? []).compactMap {
            ($0["id"] as? NSNumber)?.int64Value
        }
        let feed = await readFeed(from: nil)
        let inFeed = records.allSatisfy { record in
            feed?.changes.contains {
                $0[FeedPage.Change.type] as? String == record.type && ($0[FeedPage.Change.id] as? NSNumber)?.int64Value == record.id
            } == true
        }
        check(
            Rules.listRecords,
            Self.acknowledges(reply, document: document) && records.map(\.index) == [0, 1] && Set(records.map(\.id)).count == 2
                && repeated == records.map(\.id) && inFeed,
            "\(Self.describe(reply)): \(records.count) of 2 records named\(repeated == records.map(\.id) ? "" : ", a repeat named others")\(inFeed ? "" : ", not all in the feed")"
        )
        return records.map { ($0.type, $0.id) }
    }

    /// Deletes a record through a form that `deletes:` it: 428 without `If-Match`, 412 with a
    /// stale one, 200 with its version (the feed then carries the deletion), 200 again for the
    /// same document.
    mutating func deleteChecks(created: [(type: String, id: Int64)]) async {
        guard let form = forms.first(where: { $0.binding?.action == .deletes }), let type = form.binding?.record, let key = form.entity
        else {
            notChecked(Rules.deleteRecord, "no form of the specs deletes a record")
            return
        }
        guard let target = created.first(where: { $0.type == type })?.id ?? samples.recordIDs[type] else {
            notChecked(Rules.deleteRecord, "the server holds no \(type) to delete")
            return
        }
        let current = await send("GET", "/records/\(type)/\(target)")
        samples.recordIDs[type] = target
        let (made, problem) = await sample(form)
        guard var object = made, let etag = current.headers["etag"] else {
            notChecked(Rules.deleteRecord, "no valid \(form.name) could be made: \(problem ?? "GET /records gave no ETag")")
            return
        }
        object[key] = target
        let before = await readFeed(from: nil)
        let noBase = await submit(form, object, document: id("delete0"), key: id("delete-key-0"))
        let stale = await submit(form, object, document: id("delete1"), key: id("delete-key-1"), ifMatch: "\"999999\"")
        let document = id("delete2")
        let applied = await submit(form, object, document: document, key: id("delete-key-2"), ifMatch: etag)
        let entity = applied.json?[Acknowledgement.entity] as? [String: Any]
        let repeated = await submit(form, object, document: document, key: id("delete-key-3"), ifMatch: etag)
        let gone = await send("GET", "/records/\(type)/\(target)")
        let after = await readFeed(from: before?.cursor)
        let deletion = after?.changes.contains {
            $0[FeedPage.Change.type] as? String == type && ($0[FeedPage.Change.id] as? NSNumber)?.int64Value == target
                && $0[FeedPage.Change.deleted] as? Bool == true
        }
        check(
            Rules.deleteRecord,
            noBase.status == 428 && stale.status == 412 && Self.acknowledges(applied, document: document)
                && entity?["deleted"] as? Bool == true
                && Self.acknowledges(repeated, document: document) && gone.status == 404 && deletion == true,
            "without If-Match HTTP \(noBase.status), stale HTTP \(stale.status), \(Self.describe(applied)), again HTTP \(repeated.status), then GET HTTP \(gone.status), \(after == nil ? "the feed could not be read" : "the feed \(deletion == true ? "carries" : "lacks") the deletion")"
        )
    }

    /// A pull held by a server that lists `wait-for-changes`: answered by a change made while it
    /// waits, with it; an empty page at its end when nothing changes; a `wait` that is not a
    /// number refused.
    mutating func waitChecks(features: [String]) async {
        guard features.contains(Feature.waitForChanges.rawValue) else {
            notChecked(Rules.waitForChanges, "the server does not list wait-for-changes")
            return
        }
        guard let form = forms.first(where: { $0.binding?.action == .creates }) else {
            notChecked(Rules.waitForChanges, "no form of the specs creates a record (the change to wait for)")
            return
        }
        let (made, problem) = await sample(form, variant: 7)
        guard let object = made, let end = await readFeed(from: nil)?.cursor else {
            notChecked(Rules.waitForChanges, "no valid \(form.name) could be made: \(problem ?? "the feed did not read")")
            return
        }
        let cursor = end.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? end
        let quiet = await send("GET", "/changes?cursor=\(cursor)&wait=1")
        let quietChanges = (quiet.json?[FeedPage.changes] as? [Any])?.count
        let bad = await send("GET", "/changes?cursor=\(cursor)&wait=soon")
        let this = self
        let held = Task { await this.send("GET", "/changes?cursor=\(cursor)&wait=20") }
        try? await Task.sleep(for: .milliseconds(500))
        let document = id("wait-change")
        let write = await submit(form, object, document: document, key: id("wait-change-key"))
        let answer = await held.value
        let changes = (answer.json?[FeedPage.changes] as? [Any])?.count ?? 0
        check(
            Rules.waitForChanges,
            quiet.status == 200 && quietChanges == 0 && bad.status == 400 && bad.code == .badQuery
                && Self.acknowledges(write, document: document) && answer.status == 200 && changes >= 1,
            "with nothing to see HTTP \(quiet.status) (\(quietChanges.map(String.init) ?? "no") changes), wait=soon HTTP \(bad.status), held HTTP \(answer.status) with \(changes) change(s) after \(Self.describe(write))"
        )
    }

    /// A server that lists `subscription-feeds`: a subscription to a type whose spec says
    /// `subscribe_by:` is served with that type's matching records only; the device's own feed
    /// holds none of the type; a field the spec does not subscribe by, and a type without
    /// `subscribe_by:`, are 400 bad-subscription.
    mutating func subscriptionChecks(features: [String]) async {
        guard features.contains(Feature.subscriptions.rawValue) else {
            notChecked(Rules.subscriptions, "the server does not list \(Feature.subscriptions.rawValue)")
            return
        }
        guard let record = records.values.sorted(by: { $0.name < $1.name }).first(where: { !$0.subscribeBy.isEmpty }),
            let key = record.subscriptionKeys.first
        else {
            notChecked(Rules.subscriptions, "no record spec says subscribe_by")
            return
        }
        func query(_ subscription: SubscriptionQuery) -> String {
            "/changes?limit=200&subscription=" + (subscription.json.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        }
        let wanted =
            key.byWindow
            ? SubscriptionQuery(type: record.name, windows: [key.name: .init(from: "2000-01-01", to: nil)])
            : SubscriptionQuery(type: record.name, values: [key.name: ["conformance"]])
        let served = await send("GET", query(wanted))
        let servedChanges = served.json?[FeedPage.changes] as? [[String: Any]]
        let onlyItsType = servedChanges?.allSatisfy { $0[FeedPage.Change.type] as? String == record.name } ?? false
        let unknown = await send("GET", query(SubscriptionQuery(type: record.name, values: ["no_such_field": ["x"]])))
        let plain = records.values.sorted(by: { $0.name < $1.name }).first { $0.subscribeBy.isEmpty }
        let unsubscribable = await plain.asyncMap { await send("GET", query(SubscriptionQuery(type: $0.name))) }
        let subscribed = Set(records.values.filter { !$0.subscribeBy.isEmpty }.map(\.name))
        let own = await readFeed(from: nil)
        let ownClean = own?.changes.allSatisfy { !subscribed.contains($0[FeedPage.Change.type] as? String ?? "") } ?? false
        check(
            Rules.subscriptions,
            served.status == 200 && onlyItsType && unknown.status == 400 && unknown.code == .badSubscription
                && (unsubscribable.map { $0.status == 400 && $0.code == .badSubscription } ?? true) && ownClean,
            "\(record.name) by \(key.name): HTTP \(served.status) (\(servedChanges?.count ?? 0) change(s), \(onlyItsType ? "all" : "not all") of its type); an unknown field HTTP \(unknown.status) \(unknown.code?.rawValue ?? ""); \(plain.map { "\($0.name), without subscribe_by, " } ?? "")\(unsubscribable.map { "HTTP \($0.status)" } ?? ""); the device's own feed \(ownClean ? "holds none of them" : "holds some or did not read")"
        )
    }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async -> T) async -> T? {
        guard let self else { return nil }
        return await transform(self)
    }
}
