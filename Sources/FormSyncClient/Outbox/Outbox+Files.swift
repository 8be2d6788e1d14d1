import FormSyncModel
import FormSyncSQLite
import Foundation

extension Outbox {
    // MARK: Files of pulled records

    /// A local copy of the stored file `ref` names (a pulled record's photo, say), fetched into
    /// the attachment cache (`AttachmentCache`, `<path>.files`) on first use, in pieces that a lost connection does
    /// not waste: the next call goes on from the bytes already here. The bytes are checked
    /// against the digest the server gives before the copy is used. The least recently used
    /// copies go when the cache passes `Configuration.attachmentCacheBytes`, except the files a
    /// queued item names. A placeholder (a file still on this device) is its stashed copy.
    public func file(for ref: FileRef) async throws -> URL {
        if ref.id < 0 {
            guard let producer = try storage({ try store.producer(of: ref.id, workspace: workspace) }),
                let row = try storage({ try store.item(producer.id) }), let path = row.filePath
            else { throw OutboxError.fileUnavailable(id: ref.id, reason: "no stashed file stands for this placeholder") }
            return URL(fileURLWithPath: path)
        }
        guard ref.id > 0 else { throw OutboxError.fileUnavailable(id: ref.id, reason: "a pending file is not on the server yet") }
        let key = "\(lifecycle.view)\u{0}\(ref.id)"
        if let running = fetches[key] { return try await running.value }
        let fetch = Task { try await self.fetch(ref.id) }
        fetches[key] = fetch
        defer { fetches[key] = nil }
        return try await fetch.value
    }

    /// Fetches the files of pulled records whose fields say `download: eager` and that are not
    /// on the device yet, at most `limit` of them (the engine calls it after each pull); returns
    /// how many it fetched. A file that cannot be fetched now is tried at the next call. On a
    /// metered network (`setNetworkCost`) a file larger than its limit, or of a size the record
    /// does not give, waits for a cheaper one, as uploads do: a person who opens it still gets
    /// it at once (`file(for:)`).
    @discardableResult
    public func fetchEagerFiles(limit: Int = 32) async -> Int {
        let types = recordStore.recordTypes.names.compactMap { recordStore.recordTypes[$0] }.filter(\.fetchesFilesEagerly)
        guard !types.isEmpty else { return 0 }
        let metered = lifecycle.meteredFileLimit
        let view = lifecycle.view
        var wanted: [Int64] = []
        for type in types where wanted.count < limit {
            guard let records = try? storage({ try store.storedRecords(view: view, type: type.name) }) else { continue }
            for record in records where wanted.count < limit {
                for use in type.fileUses(record.payload) where use.eager && use.ref.id > 0 && !wanted.contains(use.ref.id) {
                    if let metered, (use.ref.byteCount ?? .max) > metered { continue }
                    if (try? storage({ try store.cachedFile(view: view, id: use.ref.id) })) == nil { wanted.append(use.ref.id) }
                }
            }
        }
        var fetched = 0
        for id in wanted.prefix(max(0, limit)) where !Task.isCancelled {
            if (try? await file(for: FileRef(id: id))) != nil { fetched += 1 }
        }
        return fetched
    }

    /// The cached copy of file `id`, fetched first when it is not complete here.
    private func fetch(_ id: Int64) async throws -> URL {
        let view = lifecycle.view
        let principal = lifecycle.principal
        let final = URL(fileURLWithPath: attachments.path(of: id, view: view))
        let now = environment.now()
        if try storage({ try store.cachedFile(view: view, id: id) }) != nil, FileManager.default.fileExists(atPath: final.path) {
            try write(.normal) { try store.touchCachedFile(view: view, id: id, usedAt: now) }
            return final
        }
        let transport = self.transport
        let (total, digest) = try await attachments.fetch(id, view: view) { offset, maxBytes in
            await transport.fetchFile(id: id, from: offset, maxBytes: maxBytes, as: principal)
        }
        try write(.normal) { try store.noteCachedFile(view: view, id: id, byteCount: total, sha256: digest, usedAt: now) }
        try evictCachedFiles(keeping: id)
        return final
    }

    /// Removes the least recently used copies until the cache is within its budget; never the
    /// file just fetched, nor one a queued item names.
    func evictCachedFiles(keeping kept: Int64) throws {
        let (files, held) = try storage { try store.cachedFiles() }
        var bytes = held
        guard bytes > configuration.attachmentCacheBytes else { return }
        let needed = try namedByQueuedItems()
        let view = lifecycle.view
        for file in files where bytes > configuration.attachmentCacheBytes {
            guard !(file.view == view && (file.id == kept || needed.contains(file.id))) else { continue }
            try write(.normal) { try store.removeCachedFile(view: file.view, id: file.id) }
            attachments.remove(file.id, view: file.view)
            bytes -= file.byteCount
        }
    }

    /// Server file ids the payloads of this workspace's items that have not landed name.
    func namedByQueuedItems() throws -> Set<Int64> {
        let rows = try storage {
            try store.items(workspace: workspace, states: [.pending, .leased, .blocked, .rejected, .conflict, .exhausted])
        }
        var ids: Set<Int64> = []
        for row in rows {
            guard let form = row.form, let entry = registry[form], let payload = row.payload else { continue }
            for use in entry.fileUses(payload) where use.ref.id > 0 { ids.insert(use.ref.id) }
        }
        return ids
    }
}
