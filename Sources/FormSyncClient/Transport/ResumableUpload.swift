import FormSyncModel
import FormSyncProtocol
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One attempt at a resumable upload (docs/PROTOCOL.md, "Resumable uploads"): create (or find again) the upload resource of the file
/// document, learn the offset the server holds, and append the rest in chunks, the last one
/// marked complete. An attempt cut off anywhere leaves the server's offset where its last
/// finished append put it: the next attempt continues from there, under the same document
/// identity, and never sends a finished range again. The server checks the whole file's
/// digest at the end.
struct ResumableUpload {
    let transport: HTTPTransport
    let request: OutboundRequest
    let path: String
    let contentType: String?
    let length: Int64
    let sha256: Data
    let progress: @Sendable (Int64, Int64) -> Void

    func run() async -> (DeliveryOutcome, DeliveryDetails) {
        var details = DeliveryDetails()
        // 1. Create, or find again: the same document always names the same upload.
        var creation = URLRequest(url: transport.url("/uploads"))
        creation.httpMethod = "POST"
        await transport.prepare(&creation, request)
        creation.setValue(String(length), forHTTPHeaderField: ProtocolHeader.uploadLength)
        creation.setValue("?0", forHTTPHeaderField: ProtocolHeader.uploadComplete)
        creation.setValue("sha-256=:\(sha256.base64EncodedString()):", forHTTPHeaderField: ProtocolHeader.reprDigest)
        creation.setValue(contentType ?? "application/octet-stream", forHTTPHeaderField: "Content-Type")
        creation.setValue("6", forHTTPHeaderField: "Upload-Draft-Interop-Version")
        guard let created = await transport.exchange(creation) else { return (unreachable(), details) }
        details.status = created.status
        details.serverFeatures = DeliveryDetails.features(created.headers[ProtocolHeader.features.lowercased()])
        details.bytesReceived += Int64(created.body.count)
        if created.status == 200 {
            // Finished before (the reply to its last append was lost): the file is stored whole.
            progress(length, length)
            return (classify(created), details)
        }
        guard created.status == 201 else { return (classify(created), details) }
        guard let location = created.headers["location"], Self.isUploadPath(location),
            var offset = Self.offset(created.headers[ProtocolHeader.uploadOffset.lowercased()]), offset <= length
        else { return (.unreachable(reason: "the upload creation reply is not FormSync's (no upload location or offset)"), details) }
        progress(offset, length)

        // 2. Append from the server's offset, chunk by chunk.
        guard let file = FileHandle(forReadingAtPath: path) else {
            return (.rejected(reason: "the stashed copy of the file cannot be read", fieldErrors: []), details)
        }
        defer { try? file.close() }
        while true {
            if Task.isCancelled { return (.unreachable(reason: "cancelled"), details) }
            let count = Int(min(Int64(transport.resumableChunkBytes), length - offset))
            let chunk: Data
            do {
                try file.seek(toOffset: UInt64(offset))
                chunk = try file.read(upToCount: count) ?? Data()
            } catch {
                return (.rejected(reason: "the stashed copy of the file cannot be read: \(error)", fieldErrors: []), details)
            }
            guard chunk.count == count else {
                return (.rejected(reason: "the stashed copy of the file is shorter than its \(length) bytes", fieldErrors: []), details)
            }
            let last = offset + Int64(count) == length
            var append = URLRequest(url: transport.url(location))
            append.httpMethod = "PATCH"
            append.httpBody = chunk
            await transport.prepare(&append, request)
            append.setValue(String(offset), forHTTPHeaderField: ProtocolHeader.uploadOffset)
            append.setValue(last ? "?1" : "?0", forHTTPHeaderField: ProtocolHeader.uploadComplete)
            append.setValue("application/partial-upload", forHTTPHeaderField: "Content-Type")
            append.setValue("6", forHTTPHeaderField: "Upload-Draft-Interop-Version")
            guard let reply = await transport.exchange(append) else { return (unreachable(), details) }
            details.status = reply.status
            details.serverFeatures = DeliveryDetails.features(reply.headers[ProtocolHeader.features.lowercased()])
            details.bytesSent += Int64(count)
            details.bytesReceived += Int64(reply.body.count)
            switch reply.status {
            case 200, 201:
                progress(length, length)
                return (classify(reply), details)
            case 204:
                guard let next = Self.offset(reply.headers[ProtocolHeader.uploadOffset.lowercased()]), next > offset, next <= length else {
                    return (.transient(reason: "the upload's offset did not move", retryAfter: nil), details)
                }
                offset = next
                progress(offset, length)
                CrashPoint.uploadChunk.reach()
                if last && offset == length {
                    return (.transient(reason: "the server took every byte but did not finish the upload", retryAfter: nil), details)
                }
            case 409:
                // The server holds another offset (an append whose reply was lost): go on from it.
                guard let held = Self.offset(reply.headers[ProtocolHeader.uploadOffset.lowercased()]), held <= length else {
                    return (classify(reply), details)
                }
                offset = held
                progress(offset, length)
            default:
                return (classify(reply), details)
            }
        }
    }

    func unreachable() -> DeliveryOutcome {
        .unreachable(reason: Task.isCancelled ? "cancelled" : "the upload was cut off; it continues from the server's offset")
    }

    func classify(_ reply: (status: Int, headers: [String: String], body: Data)) -> DeliveryOutcome {
        HTTPTransport.classify(status: reply.status, headers: reply.headers, body: reply.body, documentID: request.documentID)
    }

    /// Only a path on this server under `/uploads/`: a Location elsewhere would take the token there.
    static func isUploadPath(_ location: String) -> Bool {
        location.hasPrefix("/uploads/") && location.utf8.count <= 200
            && location.dropFirst("/uploads/".count).utf8.allSatisfy { byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45 || byte == 95
            }
    }

    static func offset(_ text: String?) -> Int64? {
        guard let text, (1...19).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int64(text)
    }
}
