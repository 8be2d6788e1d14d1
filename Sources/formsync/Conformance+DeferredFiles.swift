import FormSpec
import FormSyncCommandLine
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The checks of deferred files and of the look-up by digest (docs/PROTOCOL.md §2, "Deferred
/// files" and "Looking a file up by digest"), with a form of the server's specs that holds a file.
extension Conformance {
    mutating func deferredFiles(features: [String]) async {
        var found: (FormDefinition, String, FileRule, [String: Any])?
        for (form, field, rule) in fileFields() {
            let (sampled, why) = await sample(form, including: [field])
            if let sampled {
                found = (form, field, rule, sampled)
                break
            }
            print("note  \(form.name) gave no valid sample for the deferred-file checks: \(why ?? "?")")
        }
        guard let (form, field, rule, object) = found else { return }
        let type = ConformanceSamples.mediaType(accepted: rule.contentTypes)
        func pending(_ bytes: Data, size: Int? = nil) -> [String: Any] {
            ["digest": FileRef.digestText(SHA256.hash(bytes)), "byte_count": size ?? bytes.count, "content_type": type]
        }
        func naming(_ file: [String: Any]) -> [String: Any] {
            var copy = object
            copy[field] = rule.multiple ? [file] : file
            return copy
        }
        func held(_ reply: Reply) -> [String: Any]? {
            let value = (reply.json?["record"] as? [String: Any])?[field]
            return rule.multiple ? (value as? [[String: Any]])?.first : value as? [String: Any]
        }
        let bytes = Data(MediaSignature.signature(of: type) ?? []) + Data("conformance deferred file \(run)".utf8)
        let document = id("deferred")
        let created = await submit(form, naming(pending(bytes)), document: document, key: id("d1"))
        guard features.contains(Feature.deferredFiles.rawValue) else {
            check(Rules.pendingUnsupported, created.status == 422, Self.describe(created))
            for rule in [Rules.pendingAccepted, Rules.pendingListed, Rules.pendingCompleted, Rules.pendingGone, Rules.pendingMismatch] {
                notChecked(rule, "the server does not list deferred-files in GET /health")
            }
            await lookups(features: features, bytes: nil)
            return
        }
        notChecked(Rules.pendingUnsupported, "the server lists deferred-files: the refusal is the contract of a server without them")
        let announced = held(created)
        check(
            Rules.pendingAccepted,
            Self.acknowledges(created, document: document) && announced?["digest"] as? String == FileRef.digestText(SHA256.hash(bytes))
                && announced?["id"] == nil, "\(Self.describe(created)) \(announced.map { "\($0)" } ?? "no file in the record")")
        let listed = await send("GET", "/pending-files")
        let entries = listed.json?[PendingFileList.pending] as? [[String: Any]] ?? []
        check(
            Rules.pendingListed,
            listed.status == 200
                && entries.contains {
                    $0["document_id"] as? String == document && ($0["pointer"] as? String)?.hasPrefix("#/\(field)") == true
                },
            "HTTP \(listed.status), \(entries.count) listed")

        // Bytes announced with another size: their upload is refused, and nothing is stored.
        let other = Data(MediaSignature.signature(of: type) ?? []) + Data("conformance mismatching file \(run)".utf8)
        _ = await submit(form, naming(pending(other, size: other.count + 1)), document: id("deferred-2"), key: id("d2"))
        let mismatching = await upload(other, document: id("deferred-file-2"), type: type, key: id("d3"))
        let errors = mismatching.json?["errors"] as? [[String: Any]] ?? []
        check(
            Rules.pendingMismatch,
            mismatching.status == 422 && mismatching.code == .fileMismatch
                && errors.contains { ($0["pointer"] as? String)?.hasPrefix("#/\(field)") == true },
            "\(Self.describe(mismatching)) \(mismatching.text)")

        let stored = await upload(bytes, document: id("deferred-file"), type: type, key: id("d4"))
        let fileID = (stored.json?["id"] as? NSNumber)?.int64Value ?? 0
        let after = await send("GET", "/documents/\(document)")
        let completed = held(after)
        check(
            Rules.pendingCompleted,
            fileID > 0 && (completed?["id"] as? NSNumber)?.int64Value == fileID
                && after.headers["etag"] != nil && after.headers["etag"] != created.headers["etag"],
            "upload \(Self.describe(stored)); document \(Self.describe(after)) \(completed.map { "\($0)" } ?? "no file")")
        let relisted = await send("GET", "/pending-files")
        check(
            Rules.pendingGone,
            relisted.status == 200
                && !(relisted.json?[PendingFileList.pending] as? [[String: Any]] ?? []).contains {
                    $0[PendingFileList.Entry.documentID] as? String == document
                },
            "HTTP \(relisted.status)")

        // A file id whose size is not the stored file's.
        if fileID > 0 {
            let wrong = await submit(
                form, naming(["id": fileID, "byte_count": bytes.count + 5, "content_type": type]), document: id("deferred-3"), key: id("d5")
            )
            let wrongErrors = wrong.json?["errors"] as? [[String: Any]] ?? []
            check(
                Rules.fileReferenceChecked,
                wrong.status == 422 && wrongErrors.contains { $0["code"] as? String == ProblemCode.fileMismatch.rawValue },
                "\(Self.describe(wrong)) \(wrong.text)")
        }
        await lookups(features: features, bytes: fileID > 0 ? (bytes, fileID) : nil)
    }

    /// The look-up by digest, of bytes the server holds (when there are some).
    mutating func lookups(features: [String], bytes: (Data, Int64)?) async {
        guard features.contains(Feature.fileLookup.rawValue) else {
            for rule in [Rules.lookupFound, Rules.lookupMissing, Rules.downloadRange] {
                notChecked(rule, "the server does not list file-lookup in GET /health")
            }
            return
        }
        if let (data, fileID) = bytes {
            let whole = await send("GET", "/files/\(fileID)")
            let part = await send("GET", "/files/\(fileID)", headers: ["Range": "bytes=2-5"])
            let past = await send("GET", "/files/\(fileID)", headers: ["Range": "bytes=\(data.count + 10)-"])
            check(
                Rules.downloadRange,
                whole.status == 200 && whole.data == data
                    && part.status == 206 && part.data == data.subdata(in: 2..<6)
                    && part.headers["content-range"] == "bytes 2-5/\(data.count)"
                    && part.headers[ProtocolHeader.reprDigest.lowercased()] == FileRef.digestText(SHA256.hash(data)) && past.status == 416,
                "whole \(Self.describe(whole)), range \(Self.describe(part)) \(part.headers["content-range"] ?? "no Content-Range"), past the end \(Self.describe(past))"
            )
            let hex = SHA256.hash(data).map { String(format: "%02x", $0) }.joined()
            let found = await send("GET", "/files/sha-256/\(hex)")
            check(
                Rules.lookupFound,
                found.status == 200 && (found.json?["id"] as? NSNumber)?.int64Value == fileID
                    && (found.json?["byte_count"] as? NSNumber)?.intValue == data.count, "\(Self.describe(found)) \(found.text)")
        }
        let missing = await send(
            "GET", "/files/sha-256/\(SHA256.hash(Data("never stored \(run)".utf8)).map { String(format: "%02x", $0) }.joined())")
        let malformed = await send("GET", "/files/sha-256/not-a-digest")
        check(
            Rules.lookupMissing, missing.status == 404 && missing.code == .noSuchFile && malformed.status == 400,
            "\(Self.describe(missing)); malformed: \(Self.describe(malformed))")
    }

    /// `POST /files` of `bytes` as `type`.
    func upload(_ bytes: Data, document: String, type: String, key: String) async -> Reply {
        await send(
            "POST", "/files",
            headers: [
                ProtocolHeader.idempotencyKey: key, ProtocolHeader.document: document, "Content-Type": type,
                ProtocolHeader.contentDigest: FileRef.digestText(SHA256.hash(bytes)),
            ], body: bytes)
    }

    /// The forms of the specs with a top-level file field, each with its first such field and its rule.
    func fileFields() -> [(FormDefinition, String, FileRule)] {
        forms.sorted(by: { $0.name < $1.name }).compactMap { form in
            for field in form.fields {
                if case .file(_, let rule) = field.kind { return (form, field.name, rule) }
            }
            return nil
        }
    }
}
