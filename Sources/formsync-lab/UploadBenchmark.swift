import FieldForms
import FormSyncClient
import FormSyncCommandLine
import FormSyncModel
import FormSyncServer
import Foundation

/// `formsync-lab bench upload`: one file's upload over loopback to the embedded server as a
/// resumable upload in chunks, against a single `POST /files` of the same file, R rounds
/// interleaved (median, min, max). Every upload is of bytes the server does not hold.
enum UploadBenchmark {
    static func run(megabytes: Int, rounds: Int, chunkMegabytes: Int) async throws -> Int32 {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("formsync-upload-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try SyncServer(directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms)
        _ = try server.start()
        defer { server.stop() }
        let token = try server.issueAccessToken(workspaces: ["bench"])
        let size = megabytes * 1_000_000
        var data = Data(count: size)
        var generator = SystemRandomNumberGenerator()
        data.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for index in words.indices { words[index] = generator.next() }
        }
        let resumable = HTTPTransport(
            workspace: "bench", baseURL: server.baseURL, timeout: .seconds(120), resumableFromBytes: 1, chunkBytes: chunkMegabytes << 20
        ) { token }
        let single = HTTPTransport(workspace: "bench", baseURL: server.baseURL, timeout: .seconds(120), resumableFromBytes: Int64.max) {
            token
        }
        var chunked: [Double] = []
        var whole: [Double] = []
        for round in 0..<rounds {
            for (index, (name, transport)) in [("single", single), ("resumable", resumable)].enumerated() {
                // Bytes the server does not hold yet, as a new recording's: with the same bytes
                // every round, the look-up by digest finds them and nothing is sent.
                var serial = UInt64(round * 2 + index + 1).bigEndian
                withUnsafeBytes(of: &serial) { data.replaceSubrange(0..<8, with: $0) }
                let file = folder.appendingPathComponent("video-\(round)-\(name).mp4")
                try data.write(to: file)
                let digest = SHA256.hash(data)
                defer { try? FileManager.default.removeItem(at: file) }
                let request = OutboundRequest(
                    itemID: ItemID(Int64(round)), documentID: "bench-\(name)-\(round)-\(UUID().uuidString)", attemptID: UUID().uuidString,
                    workspace: "bench",
                    body: .file(path: file.path, contentType: "video/mp4", byteCount: Int64(size), sha256: digest))
                let start = DispatchTime.now().uptimeNanoseconds
                let (outcome, _) = await transport.deliver(request) { _, _ in }
                let seconds = OutboxBenchmark.seconds(since: start)
                guard case .done = outcome else { throw BenchmarkFailure(message: "\(name) upload failed: \(outcome)") }
                if name == "single" { whole.append(seconds) } else { chunked.append(seconds) }
            }
        }
        func rate(_ seconds: Double) -> String { String(format: "%.0f MB/s", Double(size) / 1_000_000 / seconds) }
        print("upload benchmark: one \(megabytes) MB file over loopback to the embedded server, \(rounds) rounds interleaved")
        print("  baseline: a single POST /files:               \(PullBenchmark.spread(whole)), \(rate(PullBenchmark.median(whole)))")
        print(
            "  resumable, \(chunkMegabytes) MiB PATCH chunks, digest at the end: \(PullBenchmark.spread(chunked)), \(rate(PullBenchmark.median(chunked)))"
        )
        print("  ratio resumable / single: \(String(format: "%.2f", PullBenchmark.median(chunked) / PullBenchmark.median(whole)))x")
        return 0
    }
}
