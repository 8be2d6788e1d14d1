import Foundation

/// The durable outbox: every submission is committed to SQLite before anything else happens,
/// goes out in order within its lane and in parallel across lanes, is classified on every
/// reply, and leaves only when the server acknowledged it or a person discarded it.
///
/// One actor owns the database connection, so every state transition is serialised and
/// committed before it is acted on. See DESIGN.md §4 and README "The outbox".
public actor Outbox {
    /// Tunables of the outbox.
    public struct Configuration: Sendable {
        /// How many lanes may be on the wire at once.
        public var concurrency: Int
        /// Backoff and the attempt limit after which an item is parked as exhausted.
        public var retry: RetryPolicy
        /// How long a lease lasts; must exceed the transport's request timeout, since an
        /// expired lease is presumed dead and its item is sent again (same attempt identity).
        public var leaseMilliseconds: Int64
        /// How many times one flush refreshes the token before it gives up and reports it.
        public var maxAuthRefreshesPerFlush: Int

        public init(concurrency: Int = 4, retry: RetryPolicy = RetryPolicy(), leaseMilliseconds: Int64 = 60_000, maxAuthRefreshesPerFlush: Int = 3) {
            self.concurrency = max(1, concurrency)
            self.retry = retry
            self.leaseMilliseconds = leaseMilliseconds
            self.maxAuthRefreshesPerFlush = maxAuthRefreshesPerFlush
        }
    }

    /// A file to upload with a submission: the placeholder id the payload uses for it and where
    /// the file is now (it is copied into the outbox's stash at enqueue).
    public struct Attachment: Sendable {
        public var placeholder: Int64
        public var source: URL
        public var contentType: String?

        public init(placeholder: Int64, source: URL, contentType: String? = nil) {
            self.placeholder = placeholder
            self.source = source
            self.contentType = contentType
        }
    }

    typealias State = OutboxStore.State

    /// An item on the wire.
    struct Lease: Sendable {
        var itemID: Int64
        var attemptID: String
        var request: OutboundRequest
    }

    private struct Change {
        var id: Int64
        var workspace: String
        var from: State?
        var to: State?
    }

    private let store: OutboxStore
    private let stash: FileStash
    private let registry: FormRegistry
    private let transport: any OutboxTransport
    private let environment: OutboxEnvironment
    private let configuration: Configuration
    private let refreshAuthentication: @Sendable () async -> Bool

    /// Mints placeholder ids for files and offline-created records, never repeating one this
    /// outbox has stored, even across restarts.
    public nonisolated let placeholderIDs: PlaceholderIDSource

    /// The workspace (server + tenant) items are captured in and sent to.
    public private(set) var workspace: String

    private var counts: [String: [State: Int]]
    private var inFlight: Set<Int64> = []
    private var uncommitted: [Change] = []
    private var flushTask: (generation: Int, task: Task<FlushReport, Never>)?
    private var flushGeneration = 0
    private var rescanRequested = false
    private var report = FlushReport()
    private var retryingThisFlush: Set<Int64> = []
    private var subscribers: [UUID: AsyncStream<OutboxSnapshot>.Continuation] = [:]
    private var waiters: [Int64: [CheckedContinuation<SubmitResult?, Never>]] = [:]

    /// Opens (or creates) the outbox database at `path`; its stash folder is `path + ".stash"`.
    /// Expired leases of a previous run return to pending here, keeping their attempt identity.
    /// `refreshAuthentication` is the app's hook for an expired token: it returns true when a
    /// new token is in place.
    public init(
        path: String, workspace: String, forms: [any FormPayload.Type], transport: any OutboxTransport,
        configuration: Configuration = Configuration(), environment: OutboxEnvironment = .live,
        refreshAuthentication: @escaping @Sendable () async -> Bool = { false }
    ) throws {
        let now = environment.now()
        do {
            let store = try OutboxStore(path: path, now: now)
            try store.db.transaction(.normal) {
                for (workspace, lane) in try store.reclaimExpiredLeases(now: now) {
                    try store.refreshLane(workspace: workspace, lane: lane)
                }
            }
            self.store = store
            counts = try store.counts()
            placeholderIDs = PlaceholderIDSource(milliseconds: environment.now, issuedBefore: -(try store.mostNegativePlaceholder()))
        } catch let error as SQLiteError {
            throw OutboxError.storage(error)
        }
        stash = try FileStash(directory: path + ".stash")
        registry = FormRegistry(forms)
        self.transport = transport
        self.environment = environment
        self.configuration = configuration
        self.refreshAuthentication = refreshAuthentication
        self.workspace = workspace
    }

    // MARK: Enqueue

    /// Validates `payload`, copies its attachments into the stash, and commits it (and one upload
    /// item per attachment) durably. Returns only after the commit: from then on it survives
    /// the app being killed and the power failing.
    ///
    /// - Parameters:
    ///   - documentID: the document's stable identity; minted when nil.
    ///   - creates: the placeholder id that stands for the record this submission creates, so
    ///     that later submissions can reference it before it lands.
    ///   - base: for an edit, the record as last read from the server and its version
    ///     (`If-Match`); a stale base comes back as a conflict and is merged.
    /// - Returns: the item's id.
    @discardableResult
    public func enqueue<P: FormPayload>(
        _ payload: P, attachments: [Attachment] = [], documentID: String? = nil, creates: Int64? = nil,
        base: (payload: P, version: String)? = nil
    ) throws -> Int64 {
        let errors = payload.validate()
        guard errors.isEmpty else { throw OutboxError.invalidPayload(errors) }
        guard registry[P.formName] != nil else { throw OutboxError.unknownForm(P.formName) }
        let json = try encode(payload)
        let baseJSON = try base.map { try encode($0.payload) }
        let now = environment.now()
        let attached = Dictionary(attachments.map { ($0.placeholder, $0) }, uniquingKeysWith: { a, _ in a })
        let placeholders = payload.placeholders
        let blocked = try storage { try checkDependencies(placeholders.filter { attached[$0] == nil }) }

        var copies: [(Attachment, FileStash.Copy)] = []
        do {
            for attachment in attachments where placeholders.contains(attachment.placeholder) {
                copies.append((attachment, try stash.store(attachment.source, name: environment.newID())))
            }
            let documentID = documentID ?? environment.newID()
            let laneName = payload.lane ?? "document:\(documentID)"
            return try write(.full) {
                for (attachment, copy) in copies {
                    let row = newRow(kind: .file, lane: "file:\(attachment.placeholder)", documentID: environment.newID(), now: now,
                                     produces: attachment.placeholder)
                    var file = row
                    file.filePath = copy.path
                    file.contentType = attachment.contentType
                    file.byteCount = copy.byteCount
                    file.sha256 = copy.sha256
                    file.id = try store.insert(file, now: now)
                    record(file.id, workspace, from: nil, to: .pending)
                    try store.refreshLane(workspace: workspace, lane: file.lane)
                }
                var row = newRow(kind: .submission, lane: laneName, documentID: documentID, now: now, produces: creates)
                row.form = P.formName
                row.formVersion = P.formVersion
                row.payload = json
                row.endpoint = placeholders.isEmpty ? payload.endpoint : nil
                row.basePayload = baseJSON
                row.baseVersion = base?.version
                if blocked { row.state = .blocked }
                row.id = try store.insert(row, now: now)
                record(row.id, workspace, from: nil, to: row.state)
                for placeholder in placeholders { try store.addDependency(item: row.id, placeholder: placeholder) }
                try store.refreshLane(workspace: workspace, lane: laneName)
                rescanRequested = true
                return row.id
            }
        } catch {
            for (_, copy) in copies { stash.remove(copy.path) }
            throw error
        }
    }

    /// Enqueues, then waits up to `timeout` for the item's first attempt, so that the server's
    /// field errors reach the form while the person is still on it. Durable first in every case.
    public func submit<P: FormPayload>(
        _ payload: P, attachments: [Attachment] = [], documentID: String? = nil, creates: Int64? = nil,
        base: (payload: P, version: String)? = nil, timeout: Duration
    ) async throws -> SubmitResult {
        let id = try enqueue(payload, attachments: attachments, documentID: documentID, creates: creates, base: base)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<SubmitResult?, Never>) in
            waiters[id, default: []].append(continuation)
            Task { _ = await self.flush() }
            Task {
                try? await Task.sleep(for: timeout)
                self.resumeWaiters(id, with: nil)
            }
        }
        if let result { return result }
        return .queued(id: id, state: (try? item(id)?.state) ?? .savedOnDevice)
    }

    private func resumeWaiters(_ id: Int64, with result: SubmitResult?) {
        for waiter in waiters.removeValue(forKey: id) ?? [] { waiter.resume(returning: result) }
    }

    private func newRow(kind: OutboxItem.Kind, lane: String, documentID: String, now: Int64, produces: Int64?) -> OutboxStore.Row {
        OutboxStore.Row(
            id: 0, kind: kind, workspace: workspace, lane: lane, documentID: documentID, attemptID: environment.newID(),
            form: nil, formVersion: nil, payload: nil, basePayload: nil, baseVersion: nil, produces: produces, serverID: nil,
            serverVersion: nil, filePath: nil, contentType: nil, byteCount: nil, sha256: nil, state: .pending, attempts: 0,
            nextAttemptAt: now, leaseExpiresAt: nil, lastError: nil, fieldErrors: nil, serverPayload: nil, conflicts: nil,
            endpoint: nil)
    }

    private func encode<T: Encodable>(_ value: T) throws -> Data {
        do {
            return try FormRegistry.encode(value)
        } catch {
            throw OutboxError.invalidPayload([FieldError(pointer: JSONPointer.root, code: "invalid", detail: "The payload cannot be encoded: \(error)")])
        }
    }

    // MARK: Flush

    /// Sends everything of the current workspace that is due, up to `concurrency` lanes at once,
    /// until nothing more is due now. Concurrent callers share the running flush.
    public func flush() async -> FlushReport {
        if let running = flushTask { return await running.task.value }
        flushGeneration += 1
        let generation = flushGeneration
        let task = Task { await self.runFlush() }
        flushTask = (generation, task)
        let result = await task.value
        if flushTask?.generation == generation { flushTask = nil }
        return result
    }

    private func runFlush() async -> FlushReport {
        report = FlushReport()
        retryingThisFlush = []
        var paused = false
        var refreshes = 0
        let transport = self.transport
        await withTaskGroup(of: (Lease, DeliveryOutcome).self) { group in
            var running = 0
            while true {
                rescanRequested = false
                if !paused {
                    while running < configuration.concurrency, let lease = nextLease() {
                        running += 1
                        group.addTask { (lease, await transport.send(lease.request)) }
                    }
                }
                if running == 0 {
                    if paused {
                        refreshes += 1
                        if refreshes <= configuration.maxAuthRefreshesPerFlush, await refreshAuthentication() {
                            paused = false
                            continue
                        }
                        report.authenticationRequired = true
                        break
                    }
                    if rescanRequested { continue }
                    break
                }
                guard let (lease, outcome) = await group.next() else { break }
                running -= 1
                if case .authExpired = outcome { paused = true }
                handle(lease, outcome)
            }
        }
        var result = report
        let open = counts[workspace] ?? [:]
        result.remaining = (open[.pending] ?? 0) + (open[.leased] ?? 0)
        result.retrying = retryingThisFlush.count
        return result
    }

    /// Leases the next due lane head, or nil when nothing is due now.
    private func nextLease() -> Lease? {
        let now = environment.now()
        for _ in 0..<8 {
            guard let candidates = try? store.dueLanes(workspace: workspace, now: now, limit: inFlight.count + 1),
                let (lane, head) = candidates.first(where: { !inFlight.contains($0.head) })
            else { return nil }
            do {
                if let lease = try lease(head, lane: lane, now: now) {
                    inFlight.insert(lease.itemID)
                    emit(OutboxItemChange(id: lease.itemID, state: .sent))
                    return lease
                }
            } catch {
                return nil
            }
        }
        return nil
    }

    private func lease(_ id: Int64, lane: String, now: Int64) throws -> Lease? {
        try write(.normal) { () throws -> Lease? in
            guard var row = try store.item(id),
                row.state == .pending || (row.state == .leased && (row.leaseExpiresAt ?? 0) <= now)
            else {
                try store.refreshLane(workspace: workspace, lane: lane)
                return nil
            }
            let body: OutboundRequest.Body
            switch row.kind {
            case .file:
                guard let path = row.filePath, let sha = row.sha256 else {
                    try park(&row, as: .rejected, reason: "the stashed file is missing", fieldErrors: [], now: now)
                    return nil
                }
                body = .file(path: path, contentType: row.contentType, byteCount: row.byteCount ?? 0, sha256: sha)
            case .submission:
                guard let name = row.form, let entry = registry[name], let payload = row.payload else {
                    try park(&row, as: .rejected, reason: "form \(row.form ?? "?") is not registered with this outbox", fieldErrors: [], now: now)
                    return nil
                }
                do {
                    let version = row.formVersion ?? entry.version
                    if let endpoint = row.endpoint {
                        body = .submission(form: name, version: version, endpoint: endpoint, payload: payload, baseVersion: row.baseVersion)
                    } else {
                        let remapped = try entry.remap(payload, try store.resolvedDependencies(of: row.id))
                        body = .submission(form: name, version: version, endpoint: remapped.endpoint, payload: remapped.payload, baseVersion: row.baseVersion)
                    }
                } catch let error as SQLiteError {
                    throw error
                } catch {
                    try park(&row, as: .rejected, reason: "the stored payload no longer decodes as \(name): \(error)", fieldErrors: [], now: now)
                    return nil
                }
            }
            try move(&row, to: .leased)
            row.leaseExpiresAt = now + configuration.leaseMilliseconds
            try store.update(row, now: now)
            try store.refreshLane(workspace: row.workspace, lane: row.lane)
            return Lease(
                itemID: row.id, attemptID: row.attemptID,
                request: OutboundRequest(itemID: row.id, documentID: row.documentID, attemptID: row.attemptID, workspace: row.workspace, body: body))
        }
    }

    private func handle(_ lease: Lease, _ outcome: DeliveryOutcome) {
        inFlight.remove(lease.itemID)
        retryingThisFlush.remove(lease.itemID)
        let now = environment.now()
        var removedFile: String?
        var submitResult: SubmitResult?
        do {
            try write(.normal) {
                guard var row = try store.item(lease.itemID), row.state == .leased, row.attemptID == lease.attemptID else { return }
                row.leaseExpiresAt = nil
                switch outcome {
                case .done(let ack):
                    if row.produces != nil && ack.serverID == nil {
                        try retryLater(&row, reason: "the acknowledgement carries no server id", retryAfter: nil, now: now)
                        break
                    }
                    try move(&row, to: .confirmed)
                    row.serverID = ack.serverID
                    row.serverVersion = ack.version
                    row.lastError = nil
                    try store.update(row, now: now)
                    report.sent += 1
                    if let placeholder = row.produces, let serverID = ack.serverID {
                        try store.resolve(placeholder: placeholder, serverID: serverID)
                        try releaseDependents(of: placeholder, now: now)
                    }
                    if row.kind == .file { removedFile = row.filePath }
                    submitResult = .confirmed(id: row.id, ack)
                case .transient(let reason, let retryAfter):
                    try retryLater(&row, reason: reason, retryAfter: retryAfter, now: now)
                case .authExpired:
                    try move(&row, to: .pending)
                    row.nextAttemptAt = now
                    row.lastError = "authentication expired; waiting for a new token"
                    try store.update(row, now: now)
                case .conflict(let current, let version):
                    try merge(&row, current: current, version: version, now: now)
                case .rejected(let reason, let fieldErrors):
                    row.attempts += 1
                    try park(&row, as: .rejected, reason: reason, fieldErrors: fieldErrors, now: now)
                    submitResult = .rejected(id: row.id, reason: reason, fieldErrors: fieldErrors)
                }
                try store.refreshLane(workspace: row.workspace, lane: row.lane)
                if submitResult == nil { submitResult = .queued(id: row.id, state: publicState(row)) }
            }
        } catch {
            // The transition did not commit: the item stays leased, its lease expires, and the
            // same attempt is sent again; the server's ledger answers with the recorded result.
            emit(OutboxItemChange(id: lease.itemID, state: .sending))
        }
        if let removedFile { stash.remove(removedFile) }
        if let submitResult { resumeWaiters(lease.itemID, with: submitResult) }
    }

    private func retryLater(_ row: inout OutboxStore.Row, reason: String, retryAfter: Int64?, now: Int64) throws {
        row.attempts += 1
        row.lastError = reason
        if row.attempts >= configuration.retry.maxAttempts {
            try park(&row, as: .exhausted, reason: "gave up after \(row.attempts) attempts; last error: \(reason)", fieldErrors: [], now: now)
            return
        }
        let delay = configuration.retry.delay(afterAttempts: row.attempts, random: environment.random(), retryAfterMilliseconds: retryAfter)
        row.nextAttemptAt = now + delay
        try move(&row, to: .pending)
        try store.update(row, now: now)
        retryingThisFlush.insert(row.id)
    }

    private func merge(_ row: inout OutboxStore.Row, current: Data, version: String, now: Int64) throws {
        row.attempts += 1
        row.serverPayload = current
        row.serverVersion = version
        guard let name = row.form, let entry = registry[name], let local = row.payload, let base = row.basePayload else {
            row.conflicts = try? FormRegistry.encode([FieldConflict(pointer: JSONPointer.root, reason: "The server holds a newer version and this item has no base to merge from.")])
            try park(&row, as: .conflict, reason: "the server's record changed (version \(version))", fieldErrors: [], now: now)
            return
        }
        let merged: (merged: Data, conflicts: [FieldConflict])
        do {
            merged = try entry.merge(base, local, current)
        } catch {
            row.conflicts = try? FormRegistry.encode([FieldConflict(pointer: JSONPointer.root, reason: "The server's record could not be read as \(name).")])
            try park(&row, as: .conflict, reason: "the server's record does not decode: \(error)", fieldErrors: [], now: now)
            return
        }
        if !merged.conflicts.isEmpty {
            row.conflicts = try FormRegistry.encode(merged.conflicts)
            try park(&row, as: .conflict, reason: "changed here and on the server", fieldErrors: [], now: now)
            return
        }
        if row.attempts >= configuration.retry.maxAttempts {
            try park(&row, as: .exhausted, reason: "gave up after \(row.attempts) attempts; the server's record kept changing", fieldErrors: [], now: now)
            return
        }
        row.payload = merged.merged
        row.endpoint = nil
        row.basePayload = current
        row.baseVersion = version
        row.serverPayload = nil
        row.attemptID = environment.newID()
        row.nextAttemptAt = now
        row.lastError = "merged with the server's version \(version)"
        try move(&row, to: .pending)
        try store.update(row, now: now)
    }

    /// Parks an item for a person, and blocks everything that depends on it.
    private func park(_ row: inout OutboxStore.Row, as state: State, reason: String, fieldErrors: [FieldError], now: Int64) throws {
        row.lastError = reason
        row.fieldErrors = fieldErrors.isEmpty ? nil : try FormRegistry.encode(fieldErrors)
        row.leaseExpiresAt = nil
        try move(&row, to: state)
        try store.update(row, now: now)
        try store.refreshLane(workspace: row.workspace, lane: row.lane)
        switch state {
        case .rejected: report.rejected += 1
        case .exhausted: report.exhausted += 1
        case .conflict: report.conflicts += 1
        default: break
        }
        if let placeholder = row.produces { try blockDependents(of: placeholder, now: now) }
    }

    private static func isStuck(_ state: State) -> Bool {
        state == .rejected || state == .conflict || state == .exhausted || state == .blocked
    }

    private func blockDependents(of placeholder: Int64, now: Int64) throws {
        var queue = [placeholder]
        while let next = queue.popLast() {
            for id in try store.dependents(of: next) {
                guard var row = try store.item(id), row.state == .pending else { continue }
                row.lastError = "waiting for an item it depends on, which needs attention"
                try move(&row, to: .blocked)
                try store.update(row, now: now)
                try store.refreshLane(workspace: row.workspace, lane: row.lane)
                report.blocked += 1
                if let produced = row.produces { queue.append(produced) }
            }
        }
    }

    /// After `placeholder` landed, or its producer went back to pending: dependents waiting in a
    /// lane may now be due, and blocked dependents whose other dependencies are fine are released.
    private func releaseDependents(of placeholder: Int64, now: Int64) throws {
        var queue = [placeholder]
        while let next = queue.popLast() {
            for id in try store.dependents(of: next) {
                guard var row = try store.item(id) else { continue }
                if row.state == .blocked, try !dependencyProblem(row.id) {
                    row.lastError = nil
                    row.nextAttemptAt = now
                    try move(&row, to: .pending)
                    try store.update(row, now: now)
                    if let produced = row.produces { queue.append(produced) }
                }
                if row.state == .pending { try store.refreshLane(workspace: row.workspace, lane: row.lane) }
            }
        }
    }

    /// Whether any unresolved dependency of `item` is parked, blocked or discarded.
    private func dependencyProblem(_ item: Int64) throws -> Bool {
        for placeholder in try store.dependencies(of: item) where try !store.isResolved(placeholder) {
            guard let producer = try store.producer(of: placeholder) else { return true }
            if Self.isStuck(producer.state) { return true }
        }
        return false
    }

    // MARK: Parked items

    /// Items a person has to act on in the current workspace: rejected, conflict, exhausted, blocked.
    public func parkedItems() throws -> [OutboxItem] {
        try items(in: [.rejected, .conflict, .exhausted, .blocked])
    }

    /// Items of the current workspace in the given states, in enqueue order.
    public func items(in states: Set<SyncState>) throws -> [OutboxItem] {
        var stored: Set<State> = []
        for state in states {
            switch state {
            case .savedOnDevice: stored.insert(.pending)
            case .sending, .sent: stored.insert(.leased)
            case .confirmed: stored.insert(.confirmed)
            case .rejected: stored.insert(.rejected)
            case .conflict: stored.insert(.conflict)
            case .exhausted: stored.insert(.exhausted)
            case .blocked: stored.insert(.blocked)
            }
        }
        let rows = try storage { try store.items(workspace: workspace, states: stored.sorted { $0.rawValue < $1.rawValue }) }
        return rows.map(publicItem).filter { states.contains($0.state) }
    }

    /// One item by id, in any workspace.
    public func item(_ id: Int64) throws -> OutboxItem? {
        try storage { try store.item(id) }.map(publicItem)
    }

    /// Sends a parked item again as it is (same attempt identity), with a fresh attempt budget.
    public func retry(_ id: Int64) throws {
        let now = environment.now()
        try write(.full) {
            var row = try existing(id)
            guard [.rejected, .conflict, .exhausted].contains(row.state) else {
                throw OutboxError.notAllowed(id: id, state: publicState(row), action: "retry")
            }
            try reopen(&row, now: now)
        }
    }

    /// Replaces a parked submission's payload with a fixed one: same document identity, new
    /// attempt identity. The fixed payload is validated first.
    public func resubmit<P: FormPayload>(_ id: Int64, with fixed: P) throws {
        let errors = fixed.validate()
        guard errors.isEmpty else { throw OutboxError.invalidPayload(errors) }
        let json = try encode(fixed)
        let now = environment.now()
        try write(.full) {
            var row = try existing(id)
            guard row.kind == .submission, [.rejected, .conflict, .exhausted].contains(row.state) else {
                throw OutboxError.notAllowed(id: id, state: publicState(row), action: "resubmit")
            }
            guard row.form == P.formName else { throw OutboxError.formMismatch(expected: row.form ?? "file", got: P.formName) }
            try replaceDependencies(of: row.id, with: fixed.placeholders)
            row.payload = json
            row.endpoint = fixed.placeholders.isEmpty ? fixed.endpoint : nil
            row.attemptID = environment.newID()
            try reopen(&row, now: now)
        }
    }

    /// Settles a conflict with the payload a person chose: it is sent as an edit of the server's
    /// current record (its version becomes the base), under a new attempt identity.
    public func resolveConflict<P: FormPayload>(_ id: Int64, with merged: P) throws {
        let errors = merged.validate()
        guard errors.isEmpty else { throw OutboxError.invalidPayload(errors) }
        let json = try encode(merged)
        let now = environment.now()
        try write(.full) {
            var row = try existing(id)
            guard row.state == .conflict else { throw OutboxError.notAllowed(id: id, state: publicState(row), action: "resolve a conflict of") }
            guard row.form == P.formName else { throw OutboxError.formMismatch(expected: row.form ?? "file", got: P.formName) }
            try replaceDependencies(of: row.id, with: merged.placeholders)
            row.payload = json
            row.endpoint = merged.placeholders.isEmpty ? merged.endpoint : nil
            if let server = row.serverPayload {
                row.basePayload = server
                row.baseVersion = row.serverVersion
            }
            row.serverPayload = nil
            row.conflicts = nil
            row.attemptID = environment.newID()
            try reopen(&row, now: now)
        }
    }

    /// Removes a parked or blocked item for good. Anything that depends on it stays blocked
    /// until it is discarded too. Pending and in-flight items cannot be discarded.
    public func discard(_ id: Int64) throws {
        let now = environment.now()
        let path = try write(.full) { () throws -> String? in
            var row = try existing(id)
            guard Self.isStuck(row.state) else { throw OutboxError.notAllowed(id: id, state: publicState(row), action: "discard") }
            if let placeholder = row.produces { try blockDependents(of: placeholder, now: now) }
            let path = row.filePath
            let workspace = row.workspace
            try move(&row, to: nil)
            try store.delete(row.id)
            try store.refreshLane(workspace: workspace, lane: row.lane)
            return path
        }
        if let path { stash.remove(path) }
    }

    /// Forgets confirmed items of the current workspace acknowledged before `cutoff` (ms since
    /// 1970): the server holds them, so only their local record goes, and the database stops
    /// growing. Server ids of landed placeholders stay recorded, so later submissions that
    /// reference them still resolve. Returns how many items were removed.
    @discardableResult
    public func purgeConfirmed(acknowledgedBefore cutoff: Int64) throws -> Int {
        let workspace = self.workspace
        let removed = try write(.normal) { try store.deleteConfirmed(workspace: workspace, before: cutoff) }
        counts[workspace, default: [:]][.confirmed, default: 0] -= removed
        emitSnapshot(changed: nil)
        return removed
    }

    private func existing(_ id: Int64) throws -> OutboxStore.Row {
        guard let row = try store.item(id) else { throw OutboxError.noSuchItem(id) }
        return row
    }

    /// Checks that every placeholder has landed or is produced by a stored item (throwing
    /// `unknownPlaceholder` otherwise); returns whether any producer needs attention.
    private func checkDependencies(_ placeholders: [Int64]) throws -> Bool {
        var stuck = false
        for placeholder in placeholders where try !store.isResolved(placeholder) {
            guard let producer = try store.producer(of: placeholder) else { throw OutboxError.unknownPlaceholder(placeholder) }
            if Self.isStuck(producer.state) { stuck = true }
        }
        return stuck
    }

    private func replaceDependencies(of id: Int64, with placeholders: [Int64]) throws {
        _ = try checkDependencies(placeholders)
        try store.removeDependencies(item: id)
        for placeholder in placeholders { try store.addDependency(item: id, placeholder: placeholder) }
    }

    /// Back to pending with a fresh attempt budget; blocked if a dependency still needs attention.
    private func reopen(_ row: inout OutboxStore.Row, now: Int64) throws {
        row.attempts = 0
        row.nextAttemptAt = now
        row.lastError = nil
        row.fieldErrors = nil
        try move(&row, to: try dependencyProblem(row.id) ? .blocked : .pending)
        try store.update(row, now: now)
        try store.refreshLane(workspace: row.workspace, lane: row.lane)
        if let placeholder = row.produces, row.state == .pending { try releaseDependents(of: placeholder, now: now) }
        rescanRequested = true
    }

    // MARK: Workspaces

    /// Points the outbox at another workspace: from now on it captures into and sends only that
    /// workspace's items. Other workspaces' items stay stored, untouched.
    public func switchWorkspace(to workspace: String) {
        self.workspace = workspace
        emitSnapshot(changed: nil)
    }

    // MARK: State and snapshots

    /// Counts per state for the current workspace.
    public func stateCounts() -> [SyncState: Int] {
        let stored = counts[workspace] ?? [:]
        let sent = inFlight.count
        return [
            .savedOnDevice: stored[.pending] ?? 0,
            .sending: max(0, (stored[.leased] ?? 0) - sent),
            .sent: sent,
            .confirmed: stored[.confirmed] ?? 0,
            .rejected: stored[.rejected] ?? 0,
            .conflict: stored[.conflict] ?? 0,
            .exhausted: stored[.exhausted] ?? 0,
            .blocked: stored[.blocked] ?? 0,
        ].filter { $0.value > 0 }
    }

    /// Snapshots of the current workspace, one per change, starting with the present. A slow
    /// consumer only ever misses intermediate snapshots (the newest is kept): it never blocks
    /// or fails the outbox.
    public func snapshots() -> AsyncStream<OutboxSnapshot> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: OutboxSnapshot.self, bufferingPolicy: .bufferingNewest(1))
        subscribers[id] = continuation
        continuation.yield(OutboxSnapshot(workspace: workspace, counts: stateCounts(), changed: nil))
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return stream
    }

    private func unsubscribe(_ id: UUID) {
        subscribers[id] = nil
    }

    private func emit(_ change: OutboxItemChange) {
        emitSnapshot(changed: change)
    }

    private func emitSnapshot(changed: OutboxItemChange?) {
        guard !subscribers.isEmpty else { return }
        let snapshot = OutboxSnapshot(workspace: workspace, counts: stateCounts(), changed: changed)
        for continuation in subscribers.values { continuation.yield(snapshot) }
    }

    private func publicState(_ row: OutboxStore.Row) -> SyncState {
        publicState(id: row.id, row.state)
    }

    private func publicState(id: Int64, _ state: State) -> SyncState {
        switch state {
        case .pending: return .savedOnDevice
        case .leased: return inFlight.contains(id) ? .sent : .sending
        case .confirmed: return .confirmed
        case .rejected: return .rejected
        case .conflict: return .conflict
        case .exhausted: return .exhausted
        case .blocked: return .blocked
        }
    }

    private func publicItem(_ row: OutboxStore.Row) -> OutboxItem {
        let decoder = JSONDecoder()
        return OutboxItem(
            id: row.id, kind: row.kind, state: publicState(row), documentID: row.documentID, attemptID: row.attemptID,
            form: row.form, formVersion: row.formVersion, lane: row.lane, workspace: row.workspace, payload: row.payload,
            attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, lastError: row.lastError,
            fieldErrors: row.fieldErrors.flatMap { try? decoder.decode([FieldError].self, from: $0) } ?? [],
            basePayload: row.basePayload, serverPayload: row.serverPayload, serverVersion: row.serverVersion,
            conflicts: row.conflicts.flatMap { try? decoder.decode([FieldConflict].self, from: $0) } ?? [],
            producesPlaceholder: row.produces, serverID: row.serverID)
    }

    // MARK: Transactions

    /// Records a state move, applied to the counts only once its transaction commits.
    private func move(_ row: inout OutboxStore.Row, to state: State?) throws {
        record(row.id, row.workspace, from: row.state, to: state)
        if let state { row.state = state }
    }

    private func record(_ id: Int64, _ workspace: String, from: State?, to: State?) {
        uncommitted.append(Change(id: id, workspace: workspace, from: from, to: to))
    }

    /// Runs `body` in one transaction; on commit the in-memory counts follow and snapshots go
    /// out, on failure nothing changes and the error (typed) reaches the caller.
    private func write<T>(_ durability: Durability, _ body: () throws -> T) throws -> T {
        uncommitted = []
        do {
            let result = try store.db.transaction(durability, body)
            let changes = uncommitted
            uncommitted = []
            for change in changes {
                if let from = change.from { counts[change.workspace, default: [:]][from, default: 0] -= 1 }
                if let to = change.to { counts[change.workspace, default: [:]][to, default: 0] += 1 }
            }
            if !subscribers.isEmpty {
                for change in changes where change.workspace == workspace {
                    emitSnapshot(changed: change.to.map { OutboxItemChange(id: change.id, state: publicState(id: change.id, $0)) })
                }
            }
            return result
        } catch let error as SQLiteError {
            uncommitted = []
            throw OutboxError.storage(error)
        } catch {
            uncommitted = []
            throw error
        }
    }

    private func storage<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw OutboxError.storage(error)
        }
    }
}
