import FormSpec
import FormSyncCommandLine
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The checks of documents: health and tokens, header syntax, the ledger, creates, edits,
/// versions of forms, field errors (docs/PROTOCOL.md §1–§3, §5, §6).
extension Conformance {
    /// What the document checks leave for the later ones.
    struct Held {
        var form: FormDefinition
        var object: [String: Any]
        var document: String
        var id: Int64
        var etag: String?
        var fileDocument: String?
        var fileBytes: Data?
    }

    mutating func runAll() async {
        let health = await send("GET", "/health", authorized: false)
        check(
            Rules.healthAnswers,
            health.status == 200 && health.json?["service"] as? String == "formsync" && health.json?["status"] as? String == "ok"
                && (health.json?["protocol"] as? NSNumber)?.intValue == 1,
            "HTTP \(health.status) \(health.text)")
        guard health.status != 0 else {
            print("stop  nothing answered at \(base.absoluteString) within \(Int(timeout)) s: no further check is run")
            return
        }
        if let refreshToken {
            let refreshed = await send(
                "POST", "/auth/refresh", headers: ["Content-Type": "application/json"],
                body: try? JSONSerialization.data(withJSONObject: ["refresh_token": refreshToken]), authorized: false)
            token = refreshed.json?["access_token"] as? String ?? token
            check(Rules.refreshTrades, refreshed.status == 200 && token != nil, "HTTP \(refreshed.status)")
        } else {
            notChecked(Rules.refreshTrades, "give --refresh-token")
        }
        let unknownRefresh = await send(
            "POST", "/auth/refresh", headers: ["Content-Type": "application/json"],
            body: try? JSONSerialization.data(withJSONObject: ["refresh_token": "r-not-issued-\(run)"]), authorized: false)
        check(Rules.refreshUnknown, unknownRefresh.status == 401, Self.describe(unknownRefresh))
        problem(unknownRefresh, "an unknown refresh token")

        await learnRecords()
        let held = await documents()
        await files(held: held)
        await deferredFiles(features: health.json?["features"] as? [String] ?? [])
        let unfinished = await resumableUploads()
        await feedChecks()
        await scopeChecks()
        if let held { await recordChecks(held) }
        await fieldWorkChecks(features: health.json?["features"] as? [String] ?? [])
        let missing = await send("GET", "/documents/\(id("never-written"))")
        check(Rules.documentMissing, missing.status == 404, Self.describe(missing))
        await wall(held: held, upload: unfinished)
        await deviceChecks()
        await backOfficeChecks(held: held)
        await rawSocketChecks(form: held?.form, object: held?.object)
        for rule in Rules.all where !checked.contains(rule) && skipped[rule] == nil {
            notChecked(rule, rule.notChecked ?? "no form of the specs given lends itself to it")
        }
    }

    /// Checks that an error reply is problem+json with its code (§5).
    mutating func problem(_ reply: Reply, _ what: String) {
        guard reply.status >= 400 else { return }
        check(
            Rules.problemJSON, reply.headers["content-type"]?.hasPrefix("application/problem+json") == true && reply.code != nil,
            "content type \(reply.headers["content-type"] ?? "none"), code \(reply.codeText ?? "none")", about: what)
    }

    /// The form the document checks use: one whose samples the server's specs let us make,
    /// preferring a form that creates a record (the records checks then have one).
    mutating func mainForm() async -> (FormDefinition, [String: Any], [String: Any])? {
        let ordered =
            forms.filter { $0.binding?.action == .creates }
            + forms.filter { $0.binding?.action != .creates && $0.binding?.action != .edits }
        var reasons: [String] = []
        for form in ordered {
            let (first, problem) = await sample(form)
            let (second, otherProblem) = await sample(form, variant: 1)
            if let first, let second { return (form, first, second) }
            reasons.append("\(form.name): \(problem ?? otherProblem ?? "?")")
        }
        print("note  no form gave a valid sample: \(reasons.joined(separator: "; "))")
        return nil
    }

    mutating func documents() async -> Held? {
        guard let (form, object, otherObject) = await mainForm() else { return nil }
        print("note  documents are checked with \(form.name) version \(form.version)")
        let document = id("document")

        let saved = token
        token = "not-a-token-\(run)"
        let unauthorized = await submit(form, object, document: document, key: id("k0"))
        token = saved
        check(Rules.badToken, unauthorized.status == 401, Self.describe(unauthorized))
        problem(unauthorized, "a bad token")

        let badKey = await submit(form, object, document: document, key: "has space")
        check(Rules.badKey, badKey.status == 400, Self.describe(badKey))
        let badDocument = await submit(form, object, document: "has space", key: id("k0b"))
        check(Rules.badDocument, badDocument.status == 400, Self.describe(badDocument))
        if let (body, path) = encoded(form, object) {
            let malformed = await send(
                "POST", path,
                headers: [
                    ProtocolHeader.idempotencyKey: id("k0c"), ProtocolHeader.document: id("malformed-form"),
                    ProtocolHeader.form: "\(form.name) version 1",
                    "Content-Type": "application/json",
                ], body: body)
            check(Rules.badFormHeader, malformed.status == 400 && malformed.code == .badFormHeader, Self.describe(malformed))
            let unknown = await send(
                "POST", path,
                headers: [
                    ProtocolHeader.idempotencyKey: id("k0d"), ProtocolHeader.document: id("unknown-form"),
                    ProtocolHeader.form: "NoSuchForm\(run.prefix(4)); version=1",
                    "Content-Type": "application/json",
                ], body: body)
            check(Rules.unknownForm, unknown.status == 404 && unknown.code == .unknownForm, Self.describe(unknown))
        }
        let newer = await submit(form, object, document: id("newer"), key: id("k0e"), version: form.version + 1)
        check(Rules.newerVersion, newer.status == 422 && newer.code == .unknownFormVersion, Self.describe(newer))
        let ghostEdit = await submit(form, object, document: id("ghost"), key: id("k0f"), ifMatch: "\"1\"")
        check(Rules.ifMatchNew, ghostEdit.status == 404, Self.describe(ghostEdit))

        let created = await submit(form, object, document: document, key: id("k1"))
        check(Rules.createAcknowledged, Self.acknowledges(created, document: document), Self.describe(created) + " " + created.text)
        let etag = created.headers["etag"]
        let createdID = (created.json?["id"] as? NSNumber)?.int64Value ?? 0
        check(Rules.createVersion, etag != nil && createdID > 0, "ETag \(etag ?? "missing"), id \(created.json?["id"] ?? "missing")")
        if let type = form.binding?.record, form.binding?.action == .creates, createdID > 0 { samples.recordIDs[type] = createdID }

        let replay = await submit(form, object, document: document, key: id("k1"))
        check(
            Rules.replay,
            replay.status == created.status && replay.data == created.data
                && replay.headers[ProtocolHeader.idempotentReplayed.lowercased()] == "true",
            "HTTP \(replay.status) vs \(created.status), Idempotent-Replayed \(replay.headers[ProtocolHeader.idempotentReplayed.lowercased()] ?? "missing")"
        )
        let reused = await submit(form, otherObject, document: document, key: id("k1"))
        check(Rules.keyReused, reused.status == 422 && reused.code == .keyReused, Self.describe(reused))
        problem(reused, "a reused key")

        let again = await submit(form, object, document: document, key: id("k2"))
        check(
            Rules.repeatAcknowledged, Self.acknowledges(again, document: document) && again.headers["etag"] == etag,
            "\(Self.describe(again)), ETag \(again.headers["etag"] ?? "missing") after \(etag ?? "missing")")
        let other = await submit(form, otherObject, document: document, key: id("k3"))
        check(
            Rules.otherContent,
            other.status == 409 && other.code == .documentExists && other.json?["record"] != nil && other.headers["etag"] != nil,
            Self.describe(other))

        // The same document id under another form (or as a file when the specs hold one form).
        // The other record must not come back: no `record`, and none of its run-marked text (a
        // reply may name the document id, which carries the run id too).
        let marker = object.values.compactMap { $0 as? String }.first { $0.contains(run) }
        func leaks(_ reply: Reply) -> Bool { reply.json?["record"] != nil || marker.map { reply.text.contains($0) } == true }
        if let otherForm = forms.first(where: { $0.name != form.name && $0.binding?.action != .edits }) {
            let (otherSample, _) = await sample(otherForm)
            if let otherSample {
                let misbound = await submit(otherForm, otherSample, document: document, key: id("k4"))
                check(
                    Rules.formBinding,
                    misbound.status == 409 && misbound.code == .documentFormMismatch && !leaks(misbound),
                    "\(Self.describe(misbound)): \(misbound.text)")
            }
        }
        if !checked.contains(Rules.formBinding) {
            let bytes = Data("conformance \(run)".utf8)
            let asFile = await send(
                "POST", "/files",
                headers: [
                    ProtocolHeader.idempotencyKey: id("k4b"), ProtocolHeader.document: document, "Content-Type": "text/plain",
                    ProtocolHeader.contentDigest: "sha-256=:\(SHA256.hash(bytes).base64EncodedString()):",
                ], body: bytes)
            check(
                Rules.formBinding, asFile.status == 409 && asFile.code == .documentFormMismatch && !leaks(asFile),
                "\(Self.describe(asFile)): \(asFile.text)", about: "as a file")
        }

        let edit = await submit(form, otherObject, document: document, key: id("k5"), ifMatch: etag)
        check(
            Rules.editApplied, edit.status == 200 && edit.headers["etag"] != nil && edit.headers["etag"] != etag,
            "\(Self.describe(edit)) ETag \(edit.headers["etag"] ?? "missing")")
        let stale = await submit(form, object, document: document, key: id("k6"), ifMatch: etag)
        check(
            Rules.editStale, stale.status == 412 && stale.json?["record"] != nil && stale.headers["etag"] == edit.headers["etag"],
            "\(Self.describe(stale)) ETag \(stale.headers["etag"] ?? "missing")")

        await authority()
        await fieldErrors(form, object)
        await fieldRules()
        await wrongPath()
        await olderVersion()
        await placeholder()
        await keyScoped(form)
        return Held(form: form, object: object, document: document, id: createdID, etag: edit.headers["etag"] ?? etag)
    }

    /// An edit that changes a money field the server owns (§2, step 6).
    mutating func authority() async {
        var reasons: [String] = []
        defer { if !checked.contains(Rules.authority) && !reasons.isEmpty { notChecked(Rules.authority, reasons.joined(separator: "; ")) } }
        for form in forms where form.binding?.action != .edits {
            guard
                let field = form.fields.first(where: { field in
                    if case .money = field.kind { return field.serverAuthority }
                    return false
                })
            else { continue }
            let (object, problem) = await sample(form, including: [field.name])
            guard var object else {
                reasons.append("no valid \(form.name) could be made: \(problem ?? "")")
                continue
            }
            let document = id("owned")
            let placed = await submit(form, object, document: document, key: id("k6a"))
            guard Self.acknowledges(placed, document: document) else {
                check(Rules.authority, false, "the create it edits was not acknowledged: \(Self.describe(placed)) \(placed.text)")
                return
            }
            var money = object[field.name] as? [String: Any] ?? [:]
            let minor = (money["minor_units"] as? Int64) ?? Int64((money["minor_units"] as? Int) ?? 100)
            if case .money(_, let max, _) = field.kind, let max, minor >= max {
                money["minor_units"] = minor - 1
            } else {
                money["minor_units"] = minor + 1
            }
            object[field.name] = money
            let raise = await submit(form, object, document: document, key: id("k6b"), ifMatch: placed.headers["etag"])
            check(
                Rules.authority,
                raise.status == 409 && raise.code == .authorityConflict && raise.json?["record"] != nil
                    && raise.headers["etag"] == placed.headers["etag"],
                "\(Self.describe(raise)) ETag \(raise.headers["etag"] ?? "missing")", about: "\(form.name).\(field.name)")
            return
        }
    }

    /// A payload without a required field: 422 with its pointer (§6).
    mutating func fieldErrors(_ form: FormDefinition, _ object: [String: Any]) async {
        guard let field = form.fields.first(where: { $0.required && !form.endpointFields.contains($0.name) }) else {
            notChecked(Rules.invalidPayload, "\(form.name) has no required field outside its endpoint")
            return
        }
        var broken = object
        broken[field.name] = nil
        let document = id("invalid")
        let rejected = await submit(form, broken, document: document, key: id("k7"))
        let errors = rejected.json?["errors"] as? [[String: Any]] ?? []
        let pointers = errors.compactMap { $0["pointer"] as? String }
        check(
            Rules.invalidPayload, rejected.status == 422 && rejected.code == .invalidPayload && pointers.contains("#/\(field.name)"),
            "\(Self.describe(rejected)) pointers \(pointers)", about: "\(form.name) without \(field.name)")
        problem(rejected, "an invalid payload")
    }

    /// One payload per kind of field rule the specs hold, breaking that rule alone (§6): a
    /// server that ignores `pattern`, `max_length`, a range, `constraint`, `not_relevant`,
    /// `calculated` or `not_offered` fails here. The kinds no payload could break alone are
    /// named as not checked.
    mutating func fieldRules() async {
        var present: Set<String> = []
        var exercised: Set<String> = []
        let fileID = samples.files.values.first?.id ?? 1
        for form in forms where form.binding?.action != .edits {
            let fields = form.fields.filter { !form.endpointFields.contains($0.name) }
            let wanted = Set(fields.flatMap(ConformanceFieldRules.codes)).subtracting(exercised)
            present.formUnion(wanted)
            guard !wanted.isEmpty, let entry = registry[form.name] else { continue }
            let (object, _) = await sample(form)
            guard let object else { continue }
            for field in fields {
                for code in ConformanceFieldRules.codes(field) where !exercised.contains(code) {
                    guard let broken = ConformanceFieldRules.breaking(field, code, sample: object, entry: entry, fileID: fileID) else {
                        continue
                    }
                    exercised.insert(code)
                    let reply = await submit(form, broken, document: id("rule-\(code)"), key: id("kr-\(code)"))
                    let errors = (reply.json?["errors"] as? [[String: Any]]) ?? []
                    let named = errors.contains { $0["pointer"] as? String == "#/\(field.name)" && $0["code"] as? String == code }
                    check(
                        Rules.fieldRuleKinds, reply.status == 422 && reply.code == .invalidPayload && named,
                        "\(Self.describe(reply)) errors \(errors.map { "\($0["pointer"] ?? "") \($0["code"] ?? "")" })",
                        about: "\(form.name).\(field.name): \(code)")
                }
            }
        }
        let missed = present.subtracting(exercised).sorted()
        if exercised.isEmpty {
            notChecked(Rules.fieldRuleKinds, present.isEmpty ? "the specs hold no field rule" : "no payload breaks one rule alone")
        } else if !missed.isEmpty {
            print(
                "not exercised  \(Rules.fieldErrors): no payload made from the specs breaks these rules alone: \(missed.joined(separator: ", "))"
            )
        }
    }

    /// A path whose placeholder holds another value than the payload's (§2, the path).
    mutating func wrongPath() async {
        for form in forms where !form.endpointFields.isEmpty && form.binding?.action != .edits {
            let (object, _) = await sample(form)
            guard let object else { continue }
            let path = form.endpointSegments.map { segment -> String in
                switch segment {
                case .literal(let text): return text
                case .field: return "cf-\(run)-elsewhere"
                }
            }.joined()
            let misrouted = await submit(form, object, document: id("misrouted"), key: id("k8"), path: path)
            check(Rules.wrongPath, misrouted.status == 404, Self.describe(misrouted), about: "\(form.name) at \(path)")
            return
        }
    }

    /// A payload of the previous version of a form (§2, step 3): made from the current one by
    /// undoing the last step of its upgraders (a form with no such step changed nothing an older
    /// payload holds).
    mutating func olderVersion() async {
        var reasons: [String] = []
        defer {
            if !checked.contains(Rules.olderVersion) && !reasons.isEmpty { notChecked(Rules.olderVersion, reasons.joined(separator: "; ")) }
        }
        for form in forms where form.version > 1 && form.binding?.action != .edits {
            let step = form.upgrades.last { $0.from == form.version - 1 }
            let (made, problem) = await sample(form)
            guard let current = made, let path = encoded(form, current)?.path else {
                reasons.append("no valid \(form.name) could be made: \(problem ?? "")")
                continue
            }
            var object = current
            if let step {
                // Back to the old shape: what a default fills is left out, renamed fields take
                // their old names, mapped values their old values.
                for (field, _) in step.defaults { object[field] = nil }
                for (field, values) in step.maps {
                    if let value = object[field] as? String, let old = values.first(where: { $0.new == value })?.old { object[field] = old }
                }
                for (old, new) in step.renames {
                    if let value = object[new] {
                        object[new] = nil
                        object[old] = value
                    }
                }
            }
            let document = id("older")
            let oldBody = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            let reply = await send(
                "POST", path,
                headers: [
                    ProtocolHeader.idempotencyKey: id("k9v"), ProtocolHeader.document: document,
                    ProtocolHeader.form: "\(form.name); version=\(form.version - 1)",
                    "Content-Type": "application/json",
                ], body: oldBody)
            check(
                Rules.olderVersion,
                Self.acknowledges(reply, document: document) && (reply.json?["form_version"] as? NSNumber)?.intValue == form.version,
                "\(Self.describe(reply)) form_version \(reply.json?["form_version"] ?? "missing"): \(reply.text)",
                about: "\(form.name) version \(form.version - 1)")
            return
        }
    }

    /// A negative id where a reference goes (§2, step 4).
    mutating func placeholder() async {
        for form in forms where form.binding?.action != .edits {
            guard
                let field = form.fields.first(where: { field in
                    if case .reference = field.kind { return !form.endpointFields.contains(field.name) }
                    return false
                })
            else { continue }
            let (made, _) = await sample(form, including: [field.name])
            guard var object = made else { continue }
            object[field.name] = -7
            guard let path = encoded(form, made!)?.path,
                let body = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            else { continue }
            let reply = await send(
                "POST", path,
                headers: [
                    ProtocolHeader.idempotencyKey: id("k9p"), ProtocolHeader.document: id("placeholder"),
                    ProtocolHeader.form: "\(form.name); version=\(form.version)",
                    "Content-Type": "application/json",
                ], body: body)
            let codes = (reply.json?["errors"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
            check(
                Rules.placeholder, reply.status == 422 && (reply.code == .placeholder || codes.contains("placeholder")),
                "\(Self.describe(reply)) errors \(codes)", about: "\(form.name).\(field.name)")
            return
        }
    }

    /// The same key from another principal is another key (§3).
    mutating func keyScoped(_ form: FormDefinition) async {
        guard let otherToken else {
            notChecked(Rules.keyScoped, "give --other-token (another principal of the workspace)")
            return
        }
        let (object, _) = await sample(form, variant: 2)
        guard let object else { return }
        let mine = id("scoped-mine")
        let theirs = id("scoped-theirs")
        let first = await submit(form, object, document: mine, key: id("shared-key"))
        let second = await submit(form, object, document: theirs, key: id("shared-key"), as: otherToken)
        check(
            Rules.keyScoped,
            Self.acknowledges(first, document: mine) && Self.acknowledges(second, document: theirs)
                && second.headers[ProtocolHeader.idempotentReplayed.lowercased()] == nil,
            "\(Self.describe(first)); then \(Self.describe(second))")
    }
}
