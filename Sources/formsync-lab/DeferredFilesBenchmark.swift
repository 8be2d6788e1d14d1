import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
import FormSyncServer
import Foundation

/// `formsync-lab bench files`: what deferred files and the look-up by digest buy on a slow link.
/// (1) A delivery with a 3 MB photo and a 2 KB signature, captured and flushed on a link the
/// server reads at 20 KB/s: the time from capture until the delivery is on the server, and
/// until its photo is, with the photo deferred against a server without deferred files (files
/// first, as before 0.11), R rounds interleaved. (2) Two deliveries sharing one 5 MB photo: the
/// bytes the server receives with the look-up by digest against a server without it.
enum DeferredFilesBenchmark {
    static func run(bytesPerSecond: Int, photoBytes: Int, sharedBytes: Int, rounds: Int) async throws -> Int32 {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-files-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms)
        _ = try server.start()
        defer { server.stop() }
        let token = try server.issueAccessToken(workspaces: ["bench"])
        func file(_ name: String, bytes: Int, seed: UInt64) throws -> URL {
            var random = SplitMix(seed)
            var data = Data(count: bytes)
            data.withUnsafeMutableBytes { raw in
                for index in 0..<raw.count { raw[index] = UInt8(truncatingIfNeeded: random.next()) }
            }
            let url = folder.appendingPathComponent(name)
            try MediaSignature.stamped(data, asFileNamed: name).write(to: url)
            return url
        }
        // A slow link's configuration: files of 1 MB and more go up in 256 KiB appends, each well
        // within the request timeout. (A 3 MB photo in one POST is written into the loopback
        // socket's buffers at once and then drained at 20 KB/s: no byte moves for longer than
        // the timeout, and the whole upload starts over.)
        func outbox(_ name: String) throws -> Outbox {
            let transport = HTTPTransport(
                workspace: "bench", baseURL: server.baseURL, timeout: .seconds(60), resumableFromBytes: 1_000_000, chunkBytes: 256 << 10
            ) { token }
            return try Outbox(path: folder.appendingPathComponent("\(name).sqlite").path, forms: FormCatalog.forms, transport: transport)
        }
        func capture(_ outbox: Outbox, photo: URL, signature: URL, document: String) async throws {
            let (shot, ink) = (outbox.placeholderIDs.next(), outbox.placeholderIDs.next())
            let delivery = DeliveryConfirmation(
                deliveryId: EntityRef(4711), outcome: .delivered, deliveredAt: Timestamp(Date()), recipientName: "Ana Lima",
                proofPhotos: [FileRef(id: shot, contentType: "image/jpeg")], signature: FileRef(id: ink, contentType: "image/png"))
            try await outbox.enqueue(
                delivery,
                attachments: [
                    .init(placeholder: shot, source: photo, contentType: "image/jpeg"),
                    .init(placeholder: ink, source: signature, contentType: "image/png"),
                ], documentID: document)
        }
        func photoLanded(_ document: String) -> Bool {
            guard let held = server.document(document),
                let payload = try? JSONDecoder().decode(DeliveryConfirmation.self, from: held.payload)
            else { return false }
            return payload.proofPhotos.first.map { $0.id > 0 } ?? false
        }

        // (1) Capture to "delivered on the server", on a slow link.
        server.faults.limitBandwidth(bytesPerSecond: bytesPerSecond)
        var delivered: [String: [Double]] = [:]
        var photoDone: [String: [Double]] = [:]
        for round in 0..<rounds {
            let modes = round % 2 == 0 ? ["files first", "deferred"] : ["deferred", "files first"]
            for mode in modes {
                server.acceptsDeferredFiles = mode == "deferred"
                let device = try outbox("\(mode.filter(\.isLetter))-\(round)")
                let photo = try file("photo-\(round)-\(mode.count).jpg", bytes: photoBytes, seed: UInt64(round * 2 + mode.count))
                let signature = try file("sig-\(round)-\(mode.count).png", bytes: 2_000, seed: UInt64(round * 7 + mode.count))
                let document = "bench-\(mode.filter(\.isLetter))-\(round)-\(UUID().uuidString)"
                let start = DispatchTime.now().uptimeNanoseconds
                try await capture(device, photo: photo, signature: signature, document: document)
                // An engine's rhythm: a pass, then a short pause (a tight loop of passes would take
                // a core from the server and the link it measures).
                let flushing = Task {
                    while await device.stateCounts()[.confirmed] != 3, !Task.isCancelled {
                        _ = await device.flush()
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                }
                var landed: Double?
                let deadline = Date().addingTimeInterval(Double(photoBytes) / Double(max(bytesPerSecond, 1)) * 3 + 120)
                while Date() < deadline {
                    if landed == nil, server.document(document) != nil { landed = OutboxBenchmark.seconds(since: start) }
                    if photoLanded(document) { break }
                    try await Task.sleep(for: .milliseconds(5))
                }
                let done = OutboxBenchmark.seconds(since: start)
                flushing.cancel()
                _ = await flushing.value
                guard let landed, photoLanded(document) else {
                    throw BenchmarkFailure(message: "\(mode): the delivery or its photo did not reach the server")
                }
                delivered[mode, default: []].append(landed)
                photoDone[mode, default: []].append(done)
                print(
                    "  round \(round + 1), \(mode): delivered on the server after \(String(format: "%.2f", landed)) s, photo after \(String(format: "%.1f", done)) s"
                )
            }
        }
        server.faults.limitBandwidth(bytesPerSecond: 0)
        server.acceptsDeferredFiles = true

        // (2) One photo shared by two deliveries: bytes received, by a server of its own (no
        // upload of part 1 still on its way can land in its log).
        var received: [String: Int] = [:]
        let sharing = try SyncServer(directory: folder.appendingPathComponent("server-2").path, forms: FormCatalog.forms)
        _ = try sharing.start()
        defer { sharing.stop() }
        let sharingToken = try sharing.issueAccessToken(workspaces: ["bench"])
        for mode in ["without look-up", "with look-up"] {
            let server = sharing
            func outbox(_ name: String) throws -> Outbox {
                let transport = HTTPTransport(workspace: "bench", baseURL: sharing.baseURL, timeout: .seconds(60)) { sharingToken }
                return try Outbox(
                    path: folder.appendingPathComponent("\(name).sqlite").path, forms: FormCatalog.forms, transport: transport)
            }
            server.offersFileLookup = mode == "with look-up"
            let before = server.requestLog().count
            let device = try outbox("shared-\(mode.filter(\.isLetter))")
            let shared = try file("shared-\(mode.count).jpg", bytes: sharedBytes, seed: UInt64(99 + mode.count))
            for n in 0..<2 {
                let signature = try file("shared-sig-\(mode.count)-\(n).png", bytes: 2_000, seed: UInt64(500 + n + mode.count))
                try await capture(device, photo: shared, signature: signature, document: "shared-\(mode.filter(\.isLetter))-\(n)")
            }
            for _ in 0..<200 where await device.stateCounts()[.confirmed] != 6 {
                _ = await device.flush()
                try await Task.sleep(for: .milliseconds(50))
            }
            guard await device.stateCounts()[.confirmed] == 6 else {
                throw BenchmarkFailure(message: "\(mode): the shared photo's deliveries did not land")
            }
            received[mode] = server.requestLog().dropFirst(before).filter {
                ($0.method == "POST" && $0.path == "/files") || $0.method == "PATCH"
            }.map(\.bodyBytes).reduce(0, +)
        }
        server.offersFileLookup = true

        let rate = "\(bytesPerSecond / 1000) KB/s"
        print(
            "files benchmark: a delivery with a \(photoBytes / 1_000_000) MB photo and a 2 KB signature on a link read at \(rate), \(rounds) rounds interleaved"
        )
        print("  capture → delivered on the server, baseline files first: \(PullBenchmark.spread(delivered["files first"] ?? []))")
        print("  capture → delivered on the server, photo deferred:       \(PullBenchmark.spread(delivered["deferred"] ?? []))")
        print(
            "  ratio: the delivery lands \(String(format: "%.0f", PullBenchmark.median(delivered["files first"] ?? []) / max(PullBenchmark.median(delivered["deferred"] ?? []), 0.000_001)))× sooner"
        )
        print("  capture → photo on the server, files first:              \(PullBenchmark.spread(photoDone["files first"] ?? []))")
        print("  capture → photo on the server, deferred:                 \(PullBenchmark.spread(photoDone["deferred"] ?? []))")
        print(
            "shared photo: two deliveries holding the same \(sharedBytes / 1_000_000) MB photo (and a 2 KB signature each), bytes the server received for files"
        )
        print("  without the look-up by digest (baseline): \(received["without look-up"] ?? 0)")
        print("  with the look-up by digest:               \(received["with look-up"] ?? 0)")
        return 0
    }

    /// A seeded generator for the files' bytes.
    struct SplitMix {
        var state: UInt64
        init(_ seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
