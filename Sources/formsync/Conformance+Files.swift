import FormSyncCommandLine
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The checks of files: whole uploads and resumable ones (docs/PROTOCOL.md §2).
extension Conformance {
    mutating func files(held: Held?) async {
        let bytes = Data("conformance file \(run)".utf8)
        let digest = "sha-256=:\(SHA256.hash(bytes).base64EncodedString()):"
        let document = id("file")
        func post(_ body: Data, document: String, key: String, digest: String?) async -> Reply {
            var headers = [ProtocolHeader.idempotencyKey: key, ProtocolHeader.document: document, "Content-Type": "text/plain"]
            if let digest { headers[ProtocolHeader.contentDigest] = digest }
            return await send("POST", "/files", headers: headers, body: body)
        }
        let stored = await post(bytes, document: document, key: id("f1"), digest: digest)
        check(Rules.fileAcknowledged, Self.acknowledges(stored, document: document), "\(Self.describe(stored)) \(stored.text)")
        let again = await post(bytes, document: document, key: id("f2"), digest: digest)
        check(
            Rules.fileAgain, again.status == 200 && again.json?["id"] as? NSNumber == stored.json?["id"] as? NSNumber, Self.describe(again))
        let otherBytes = Data("other bytes \(run)".utf8)
        let other = await post(
            otherBytes, document: document, key: id("f3"), digest: "sha-256=:\(SHA256.hash(otherBytes).base64EncodedString()):")
        check(Rules.fileOther, other.status == 409 && other.code == .documentExists, Self.describe(other))
        let wrong = await post(
            bytes, document: id("file2"), key: id("f4"), digest: "sha-256=:\(SHA256.hash(Data("x".utf8)).base64EncodedString()):")
        check(Rules.fileWrongDigest, wrong.status == 400, Self.describe(wrong))
        problem(wrong, "a wrong digest")
        let missing = await post(bytes, document: id("file3"), key: id("f5"), digest: nil)
        check(Rules.fileNoDigest, missing.status == 400, Self.describe(missing))
    }

    /// Resumable uploads: create, append in two parts, a wrong offset, the offset query, the
    /// completion with the digest checked, the same document found again, a digest that lies,
    /// the quota. Returns the upload it leaves unfinished (the lying one, started over at 0).
    mutating func resumableUploads() async -> (document: String, location: String) {
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let digest = "sha-256=:\(SHA256.hash(bytes).base64EncodedString()):"
        let document = id("resumable")
        func create(_ document: String, length: Int, digest: String, key: String) async -> Reply {
            await send(
                "POST", "/uploads",
                headers: [
                    ProtocolHeader.idempotencyKey: key, ProtocolHeader.document: document, ProtocolHeader.uploadLength: String(length),
                    ProtocolHeader.uploadComplete: "?0",
                    ProtocolHeader.reprDigest: digest, "Content-Type": "application/octet-stream", "Upload-Draft-Interop-Version": "6",
                ])
        }
        let created = await create(document, length: bytes.count, digest: digest, key: id("u30"))
        let location = created.headers["location"] ?? ""
        check(
            Rules.uploadCreate,
            created.status == 201 && location.hasPrefix("/uploads/") && created.headers[ProtocolHeader.uploadOffset.lowercased()] == "0",
            "HTTP \(created.status) \(location)")
        func append(_ range: Range<Int>, at offset: Int, complete: Bool) async -> Reply {
            await send(
                "PATCH", location,
                headers: [
                    ProtocolHeader.uploadOffset: String(offset), ProtocolHeader.uploadComplete: complete ? "?1" : "?0",
                    "Content-Type": "application/partial-upload",
                ], body: bytes.subdata(in: range))
        }
        let first = await append(0..<100_000, at: 0, complete: false)
        check(
            Rules.uploadAppend, first.status == 204 && first.headers[ProtocolHeader.uploadOffset.lowercased()] == "100000",
            "HTTP \(first.status) offset \(first.headers[ProtocolHeader.uploadOffset.lowercased()] ?? "none")")
        let wrong = await append(0..<100_000, at: 0, complete: false)
        check(
            Rules.uploadWrongOffset, wrong.status == 409 && wrong.headers[ProtocolHeader.uploadOffset.lowercased()] == "100000",
            "HTTP \(wrong.status) offset \(wrong.headers[ProtocolHeader.uploadOffset.lowercased()] ?? "none")")
        let head = await send("HEAD", location)
        check(
            Rules.uploadHead, (200..<300).contains(head.status) && head.headers[ProtocolHeader.uploadOffset.lowercased()] == "100000",
            "HTTP \(head.status) offset \(head.headers[ProtocolHeader.uploadOffset.lowercased()] ?? "none")")
        let again = await create(document, length: bytes.count, digest: digest, key: id("u31"))
        check(
            Rules.uploadFoundAgain, again.status == 201 && again.headers[ProtocolHeader.uploadOffset.lowercased()] == "100000",
            "HTTP \(again.status) offset \(again.headers[ProtocolHeader.uploadOffset.lowercased()] ?? "none")")
        let last = await append(100_000..<bytes.count, at: 100_000, complete: true)
        let fileID = (last.json?["id"] as? NSNumber)?.int64Value ?? 0
        check(
            Rules.uploadComplete, Self.acknowledges(last, document: document) && fileID > 0,
            "\(Self.describe(last)) id \(last.json?["id"] ?? "missing")")
        let done = await create(document, length: bytes.count, digest: digest, key: id("u32"))
        check(Rules.uploadFinishedAgain, done.status == 200 && (done.json?["id"] as? NSNumber)?.int64Value == fileID, "HTTP \(done.status)")
        let small = id("resumable-small")
        let smallCreated = await create(
            small, length: 10, digest: "sha-256=:\(SHA256.hash(Data(count: 10)).base64EncodedString()):", key: id("u34"))
        let smallLocation = smallCreated.headers["location"] ?? "/uploads/none"
        let tooLong = await send(
            "PATCH", smallLocation,
            headers: [ProtocolHeader.uploadOffset: "0", ProtocolHeader.uploadComplete: "?0", "Content-Type": "application/partial-upload"],
            body: Data(count: 11))
        check(Rules.uploadTooLong, tooLong.status == 400 && tooLong.code == .uploadTooLong, Self.describe(tooLong))
        let incomplete = await send(
            "PATCH", smallLocation,
            headers: [ProtocolHeader.uploadOffset: "0", ProtocolHeader.uploadComplete: "?1", "Content-Type": "application/partial-upload"],
            body: Data(count: 4))
        check(Rules.uploadIncomplete, incomplete.status == 400 && incomplete.code == .uploadIncomplete, Self.describe(incomplete))
        let onUpload = await send(
            "POST", "/files",
            headers: [
                ProtocolHeader.idempotencyKey: id("u35"), ProtocolHeader.document: small, "Content-Type": "application/octet-stream",
                ProtocolHeader.contentDigest: "sha-256=:\(SHA256.hash(Data(count: 10)).base64EncodedString()):",
            ], body: Data(count: 10))
        check(Rules.fileOnUpload, onUpload.status == 409 && onUpload.code == .documentExists, Self.describe(onUpload))
        // Finished, so that it holds no quota of a later run.
        _ = await send(
            "PATCH", smallLocation,
            headers: [ProtocolHeader.uploadOffset: "0", ProtocolHeader.uploadComplete: "?1", "Content-Type": "application/partial-upload"],
            body: Data(count: 10))
        let nowhere = await send("HEAD", "/uploads/\(id("no-such-upload"))")
        check(Rules.noSuchUpload, nowhere.status == 404, Self.describe(nowhere))
        let liar = id("resumable-liar")
        let lying = await create(
            liar, length: bytes.count, digest: "sha-256=:\(SHA256.hash(Data("other".utf8)).base64EncodedString()):", key: id("u33"))
        let lyingLocation = lying.headers["location"] ?? ""
        let whole = await send(
            "PATCH", lyingLocation,
            headers: [ProtocolHeader.uploadOffset: "0", ProtocolHeader.uploadComplete: "?1", "Content-Type": "application/partial-upload"],
            body: bytes)
        check(Rules.uploadDigest, whole.status == 400 && whole.code == .digestMismatch, "HTTP \(whole.status) \(whole.codeText ?? "")")

        // The quota: unfinished uploads of one byte each until the server says 429 (at most 64).
        // They are finished afterwards, so that they hold no quota of a later run.
        var quota: Reply?
        var opened: [String] = []
        for n in 0..<64 {
            let tiny = await create(
                id("quota-\(n)"), length: 1, digest: "sha-256=:\(SHA256.hash(Data([0])).base64EncodedString()):", key: id("uq\(n)"))
            if tiny.status != 201 {
                quota = tiny
                break
            }
            if let place = tiny.headers["location"] { opened.append(place) }
        }
        for place in opened {
            _ = await send(
                "PATCH", place,
                headers: [
                    ProtocolHeader.uploadOffset: "0", ProtocolHeader.uploadComplete: "?1", "Content-Type": "application/partial-upload",
                ],
                body: Data([0]))
        }
        if let quota {
            check(
                Rules.uploadQuota, quota.status == 429 && quota.code == .uploadQuota && Int(quota.headers["retry-after"] ?? "") != nil,
                "\(Self.describe(quota)) Retry-After \(quota.headers["retry-after"] ?? "missing")")
        } else {
            notChecked(Rules.uploadQuota, "64 unfinished uploads were all accepted (a server MAY choose a larger quota)")
        }
        return (liar, lyingLocation)
    }
}
