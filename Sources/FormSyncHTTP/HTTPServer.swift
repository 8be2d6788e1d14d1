import FormSyncProtocol
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A small HTTP/1.1 server on a loopback socket, with every resource bounded: one event-loop
/// thread (`poll`) owns the sockets and parses requests as bytes arrive; a fixed pool of workers
/// runs the handler. Connections are capped (an idle one is closed to make room; with none idle,
/// the newcomer gets 503); heads, idle keep-alives and bodies have deadlines (slowloris); head
/// size and header count are limited (431); a request's head is shown to `preflight` before its
/// body is read, so a missing token or a body over the route's limit is refused (401, 413)
/// without reading it; the accept loop survives running out of file descriptors (it closes an
/// idle connection and backs off) and every other error. The handler returns nil to lose the
/// reply (the "reply lost" fault): it is cut off after its head and the first bytes of its body.
public final class HTTPServer: @unchecked Sendable {
    /// Answers one request; nil loses the reply (cut off in its body, then the connection ends).
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse?
    /// Answers one request by calling `reply` once, from any thread, possibly after it returned
    /// (the reference server replies once an fsync it did not wait for covers the request).
    package typealias DeferredHandler = @Sendable (HTTPRequest, _ reply: @escaping @Sendable (HTTPResponse?) -> Void) -> Void

    /// What to do with a request whose head has arrived, before its body is read.
    public enum Preflight: Sendable {
        /// Read the body, at most this many bytes (413 above it, decided from the head); `note`
        /// is handed to the handler with the request (`HTTPRequest.preflightNote`), so that what
        /// the head's check found is not looked up again.
        case read(maxBodyBytes: Int, note: (any Sendable)? = nil)
        /// Answer this now, without reading the body, and close the connection.
        case refuse(HTTPResponse)
    }

    /// The server's bounds.
    public struct Limits: Sendable {
        /// Open connections at most; past it an idle one is closed, or the newcomer gets 503.
        public var maxConnections = 4096
        /// The largest request head (request line and headers); past it, 431.
        public var maxHeaderBytes = 16 * 1024
        /// The most header fields in one request; past it, 431.
        public var maxHeaderCount = 100
        /// Body limit when `preflight` does not say otherwise.
        public var maxBodyBytes = 64 * 1024 * 1024
        /// Bytes of request bodies held in memory at once, across connections; past it, 503.
        public var maxBufferedBodyBytes = 256 * 1024 * 1024
        /// Seconds to receive a whole head once its first byte arrived.
        public var headTimeout: Double = 10
        /// Seconds a connection may sit with no request in progress.
        public var idleTimeout: Double = 30
        /// Seconds to receive a whole body.
        public var bodyTimeout: Double = 60
        /// Handler threads.
        public var workers = 4

        public init() {}
    }

    private final class Connection {
        let fd: Int32
        var parser: HTTPRequestParser
        var deadline: Double
        var lastActivity: Double
        var processing = false
        var output: [UInt8] = []
        /// How much of `output` is sent (bytes are dropped when all are, not one send at a time).
        var outputStart = 0
        var closeAfterWrite = false
        /// A streamed body still to send: its source, the next offset and its end.
        var stream: (body: HTTPBodyStream, next: Int64, end: Int64)?
        /// Whether a worker is reading the stream's next piece.
        var refilling = false
        /// Bytes of the streaming budget this connection holds (its piece in flight or in `output`).
        var streamReserved = 0
        /// Tells this connection from a later one on the same descriptor.
        let serial: Int
        var reservedBody = 0
        /// What the preflight of the request being read noted.
        var preflightNote: (any Sendable)?
        /// Bumped on every activity; an entry of the idle queue with an older stamp is stale.
        var stamp = 0

        init(fd: Int32, serial: Int, parser: HTTPRequestParser, now: Double, idle: Double) {
            self.fd = fd
            self.serial = serial
            self.parser = parser
            deadline = now + idle
            lastActivity = now
        }
    }

    private struct Job {
        var fd: Int32
        var request: HTTPRequest
        var keepAlive: Bool
    }

    /// A piece of a streamed body for a worker to read, and what came of it.
    private struct Refill {
        var fd: Int32
        var serial: Int
        var body: HTTPBodyStream
        var offset: Int64
        var count: Int
        var result: Result<Data, any Error>?
    }

    /// The size of each piece of a streamed body.
    package static let streamPieceBytes = HTTPBodyStream.pieceBytes
    /// Bytes of streamed bodies in memory at once, across connections: past it a connection
    /// waits for its next piece until another's is sent.
    package static let streamBudgetBytes = 32 * 1024 * 1024

    private let handler: DeferredHandler
    private let preflight: @Sendable (HTTPRequest) -> Preflight
    /// Bytes per second the server reads from all its connections together (0: no limit), as a
    /// slow link would carry them: a test's or the demo's 2G uplink (`FaultPlan.bandwidth`).
    private let receiveRate: @Sendable () -> Int
    private let limits: Limits
    private let lock = NSLock()
    private var stopped = false
    private var listener: Int32 = -1
    private var wake: (read: Int32, write: Int32) = (-1, -1)
    private var jobs: [Job] = []
    private var refills: [Refill] = []
    private var refilled: [Refill] = []
    private let jobsReady = NSCondition()
    private var finished: [(fd: Int32, response: HTTPResponse?, keepAlive: Bool)] = []
    private var openConnections = 0
    private var bufferedBodyBytes = 0
    private var idleQueueLength = 0
    private var streamingCount = 0
    private var streamBytesHeld = 0
    /// Signalled when the event loop has closed every socket, so that `stop()` returns only then
    /// and the port can be bound again at once.
    private let loopEnded = DispatchSemaphore(value: 0)
    private var running = false

    /// A server that answers with `handler`; `preflight` sees each head first (default: read
    /// the body up to `limits.maxBodyBytes`).
    public convenience init(limits: Limits = Limits(), preflight: (@Sendable (HTTPRequest) -> Preflight)? = nil, handler: @escaping Handler)
    {
        self.init(limits: limits, preflight: preflight, deferred: { request, reply in reply(handler(request)) })
    }

    /// A server whose handler replies when it is ready; a worker is free for the next request
    /// as soon as the handler returns.
    package init(
        limits: Limits = Limits(), preflight: (@Sendable (HTTPRequest) -> Preflight)? = nil,
        receiveRate: @escaping @Sendable () -> Int = { 0 },
        deferred handler: @escaping DeferredHandler
    ) {
        self.limits = limits
        self.receiveRate = receiveRate
        let defaultLimit = limits.maxBodyBytes
        self.preflight = preflight ?? { _ in .read(maxBodyBytes: defaultLimit) }
        self.handler = handler
    }

    /// A server that refuses bodies over `maxBodyBytes` with 413.
    public convenience init(maxBodyBytes: Int, handler: @escaping Handler) {
        var limits = Limits()
        limits.maxBodyBytes = maxBodyBytes
        self.init(limits: limits, handler: handler)
    }

    /// How many connections are open now (for tests and the load check).
    public var connectionCount: Int { lock.withLock { openConnections } }

    /// Entries in the event loop's idle-order queue (tests check it stays bounded).
    var idleQueueCount: Int { lock.withLock { idleQueueLength } }

    /// Replies whose streamed bodies are under way, and the bytes of those bodies the server
    /// holds for them now (read ahead of the client, or being read): tests check the second
    /// stays within `streamBudgetBytes` however large the bodies and however slow the readers.
    package var streamingReplies: (count: Int, bytesHeld: Int) { lock.withLock { (streamingCount, streamBytesHeld) } }

    /// Listens on `host`:`port` (an IPv4 address, 127.0.0.1 by default; 0 picks a free port)
    /// and returns the port.
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) throws -> UInt16 {
        var hostAddress = in_addr()
        guard inet_pton(AF_INET, host, &hostAddress) == 1 else { throw ServerError.socket("\(host) is not an IPv4 address") }
        let fd = Socket.tcp()
        guard fd >= 0 else { throw ServerError.socket("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Socket.address(hostAddress, port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 1024) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ServerError.socket("cannot listen on \(host):\(port): \(reason)")
        }
        Self.setNonBlocking(fd)
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            close(fd)
            throw ServerError.socket("pipe: \(String(cString: strerror(errno)))")
        }
        Self.setNonBlocking(pipeEnds[0])
        Self.setNonBlocking(pipeEnds[1])
        lock.withLock {
            listener = fd
            wake = (pipeEnds[0], pipeEnds[1])
            stopped = false
            running = true
        }
        let readEnd = pipeEnds[0]
        let loop = Thread { [self] in eventLoop(listener: fd, wake: readEnd) }
        loop.stackSize = 1 << 20
        loop.start()
        for _ in 0..<max(1, limits.workers) {
            let worker = Thread { [self] in work() }
            worker.stackSize = 1 << 20
            worker.start()
        }
        return UInt16(bigEndian: actual.sin_port)
    }

    /// Stops accepting and closes every open connection; returns once the listening socket is
    /// closed (at most a couple of seconds).
    public func stop() {
        let wasRunning = lock.withLock { () -> Bool in
            stopped = true
            if wake.write >= 0 { _ = Self.poke(wake.write) }
            defer { running = false }
            return running
        }
        jobsReady.lock()
        jobsReady.broadcast()
        jobsReady.unlock()
        if wasRunning { _ = loopEnded.wait(timeout: .now() + 2) }
    }

    // MARK: Workers

    private func work() {
        while true {
            jobsReady.lock()
            while jobs.isEmpty && refills.isEmpty && !lock.withLock({ stopped }) { jobsReady.wait() }
            if jobs.isEmpty && refills.isEmpty {
                jobsReady.unlock()
                return
            }
            if !refills.isEmpty {
                var refill = refills.removeFirst()
                jobsReady.unlock()
                refill.result = Result { try refill.body.read(refill.offset, refill.count) }
                lock.withLock {
                    refilled.append(refill)
                    if finished.isEmpty && refilled.count == 1 && wake.write >= 0 { _ = Self.poke(wake.write) }
                }
                continue
            }
            let job = jobs.removeFirst()
            jobsReady.unlock()
            handler(job.request) { [self] response in finish(job, response) }
        }
    }

    /// Hands a reply to the event loop. One wake-up serves every reply handed over before the
    /// loop collects them: it drains its pipe before it takes the list.
    private func finish(_ job: Job, _ response: HTTPResponse?) {
        var response = response
        // A reply to HEAD never has content (RFC 9110 §9.3.2): bytes after its head would be
        // read as the next reply on a keep-alive connection.
        if job.request.method == "HEAD" {
            response?.body = Data()
            response?.stream = nil
        }
        lock.withLock {
            finished.append((job.fd, response, job.keepAlive))
            if finished.count == 1 && refilled.isEmpty && wake.write >= 0 { _ = Self.poke(wake.write) }
        }
    }

    private func dispatch(_ job: Job) {
        jobsReady.lock()
        jobs.append(job)
        jobsReady.signal()
        jobsReady.unlock()
    }

    private func dispatch(_ refill: Refill) {
        jobsReady.lock()
        refills.append(refill)
        jobsReady.signal()
        jobsReady.unlock()
    }

    // MARK: The event loop

    private static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    private func eventLoop(listener: Int32, wake: Int32) {
        var connections: [Int32: Connection] = [:]
        // Connections in order of last activity (stale entries are skipped), so that finding
        // the one idle the longest costs O(1) amortised however many are open.
        var idleOrder: [(fd: Int32, stamp: Int)] = []
        var idleHead = 0
        var acceptPausedUntil = 0.0
        let parserLimits = HTTPRequestParser.Limits(maxHeaderBytes: limits.maxHeaderBytes, maxHeaderCount: limits.maxHeaderCount)
        var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
        // The link's token bucket: bytes it may read now, refilled at `receiveRate()` per second
        // up to a quarter second's worth.
        var allowance = 0.0
        var refilledAt = Self.now()
        // Each connection ready to be read takes its share of the allowance, as TCP flows share a
        // link, and the first turn goes round: no connection waits behind another for long.
        var share = Int.max
        var turn = 0
        // Streamed bodies: the budget's bytes in use, connections waiting for budget, and the
        // serial number of the next connection.
        var streamInUse = 0
        // Connections whose reply streams its body now, counted as they start and end (not
        // recounted over every connection at each wake-up).
        var streaming = 0
        var starved: [(fd: Int32, serial: Int)] = []
        var nextSerial = 0

        func closeConnection(_ connection: Connection) {
            connections[connection.fd] = nil
            streamInUse -= connection.streamReserved
            connection.streamReserved = 0
            if connection.stream != nil {
                connection.stream = nil
                streaming -= 1
            }
            if connection.reservedBody > 0 { lock.withLock { bufferedBodyBytes -= connection.reservedBody } }
            close(connection.fd)
            lock.withLock { openConnections = connections.count }
        }

        func respond(_ connection: Connection, _ response: HTTPResponse, keepAlive: Bool) {
            Self.serialize(response, keepAlive: keepAlive, into: &connection.output)
            connection.closeAfterWrite = !keepAlive
            if let stream = response.stream, stream.count > 0, response.status != 204 {
                if connection.stream == nil { streaming += 1 }
                connection.stream = (stream, 0, stream.count)
            }
            flush(connection)
        }

        /// Asks a worker for the next piece of the connection's streamed body, when the budget
        /// has room; otherwise the connection waits its turn.
        func refill(_ connection: Connection) {
            guard let stream = connection.stream, !connection.refilling else { return }
            let count = Int(min(Int64(Self.streamPieceBytes), stream.end - stream.next))
            guard streamInUse + count <= Self.streamBudgetBytes || streamInUse == 0 else {
                starved.append((connection.fd, connection.serial))
                return
            }
            streamInUse += count
            connection.streamReserved = count
            connection.refilling = true
            dispatch(Refill(fd: connection.fd, serial: connection.serial, body: stream.body, offset: stream.next, count: count))
        }

        /// Gives the budget freed to connections that waited for it, oldest first.
        func feedStarved() {
            while let first = starved.first, streamInUse < Self.streamBudgetBytes {
                starved.removeFirst()
                if let connection = connections[first.fd], connection.serial == first.serial { refill(connection) }
            }
        }

        func refuse(_ connection: Connection, _ code: ProblemCode, _ message: String, headers: [(String, String)] = []) {
            respond(connection, .problem(code, detail: message, headers: headers), keepAlive: false)
        }

        func flush(_ connection: Connection) {
            while connection.outputStart < connection.output.count {
                let n = connection.output.withUnsafeBytes {
                    Socket.send(connection.fd, UnsafeRawBufferPointer(rebasing: $0[connection.outputStart...]))
                }
                if n > 0 {
                    connection.outputStart += n
                    // A reply under way is progress: a slow reader is timed from its last bytes.
                    if connection.stream != nil { connection.deadline = Self.now() + limits.idleTimeout }
                } else {
                    if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
                    closeConnection(connection)
                    return
                }
            }
            connection.output.removeAll(keepingCapacity: connection.output.count <= Self.streamPieceBytes)
            connection.outputStart = 0
            if connection.streamReserved > 0 && !connection.refilling {
                streamInUse -= connection.streamReserved
                connection.streamReserved = 0
                feedStarved()
            }
            if let stream = connection.stream {
                if stream.next < stream.end {
                    refill(connection)
                    return
                }
                connection.stream = nil
                streaming -= 1
            }
            if connection.closeAfterWrite {
                shutdown(connection.fd, Int32(SHUT_WR))
                closeConnection(connection)
            }
        }

        func touch(_ connection: Connection, now: Double) {
            connection.lastActivity = now
            connection.stamp += 1
            idleOrder.append((connection.fd, connection.stamp))
            // Stale entries pile up with every read; past a bound, rebuild the queue from the
            // open connections, so it never holds more than a few entries per connection.
            if idleOrder.count - idleHead > max(4096, 4 * connections.count) {
                idleOrder = connections.values.sorted { $0.lastActivity < $1.lastActivity }.map { ($0.fd, $0.stamp) }
                idleHead = 0
            }
            lock.withLock { idleQueueLength = idleOrder.count - idleHead }
        }

        /// Closes the connection idle the longest (no request in progress), to make room.
        func evictIdle() -> Bool {
            var skipped: [(fd: Int32, stamp: Int)] = []
            defer { idleOrder.append(contentsOf: skipped) }
            while idleHead < idleOrder.count {
                let (fd, stamp) = idleOrder[idleHead]
                idleHead += 1
                guard let connection = connections[fd], connection.stamp == stamp else { continue }
                guard !connection.processing && connection.output.isEmpty && !connection.parser.isMidRequest else {
                    skipped.append((fd, stamp))  // busy now; it stays in line
                    if skipped.count > 64 { return false }
                    continue
                }
                closeConnection(connection)
                return true
            }
            return false
        }

        func acceptAll(now: Double) {
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 {
                    switch errno {
                    case EAGAIN, EWOULDBLOCK, EINTR, ECONNABORTED, EPROTO:
                        return
                    case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                        // Out of descriptors or memory: make room if an idle connection can go,
                        // else stop accepting for a moment. Never give up on serving.
                        if !evictIdle() { acceptPausedUntil = now + 0.1 }
                        FileHandle.standardError.write(
                            Data("formsync server: accept: \(String(cString: strerror(errno))); backing off\n".utf8))
                        return
                    default:
                        acceptPausedUntil = now + 0.1
                        FileHandle.standardError.write(Data("formsync server: accept: \(String(cString: strerror(errno)))\n".utf8))
                        return
                    }
                }
                Self.setNonBlocking(client)
                Socket.noSignalOnWrite(client)
                var noDelay: Int32 = 1
                setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
                if connections.count >= limits.maxConnections && !evictIdle() {
                    let busy = Self.serialize(
                        .problem(.busy, detail: "too many connections", headers: [("Retry-After", "1")]),
                        keepAlive: false)
                    _ = busy.withUnsafeBytes { Socket.send(client, $0) }
                    close(client)
                    continue
                }
                nextSerial += 1
                let connection = Connection(
                    fd: client, serial: nextSerial, parser: HTTPRequestParser(limits: parserLimits), now: now, idle: limits.idleTimeout)
                connections[client] = connection
                touch(connection, now: now)
                lock.withLock { openConnections = connections.count }
            }
        }

        /// Runs the parser as far as the bytes go.
        func advance(_ connection: Connection, now: Double) {
            var step = connection.parser.next()
            while true {
                switch step {
                case .needMore:
                    return
                case .refuse(let code, let message):
                    refuse(connection, code, message)
                    return
                case .head(let head, _):
                    switch preflight(head) {
                    case .refuse(let response):
                        respond(connection, response, keepAlive: false)
                        return
                    case .read(let limit, let note):
                        connection.preflightNote = note
                        let declared = HTTPRequestParser.contentLength(head.headers["content-length"])
                        let reserve = min(declared ?? limit, limit)
                        if let declared, declared > limit {
                            refuse(connection, .tooLarge, "the body is larger than \(limit) bytes")
                            return
                        }
                        let granted = lock.withLock { () -> Bool in
                            guard bufferedBodyBytes + reserve <= limits.maxBufferedBodyBytes else { return false }
                            bufferedBodyBytes += reserve
                            return true
                        }
                        guard granted else {
                            refuse(connection, .busy, "the server is receiving too much at once", headers: [("Retry-After", "1")])
                            return
                        }
                        connection.reservedBody = reserve
                        connection.deadline = now + limits.bodyTimeout
                        step = connection.parser.beginBody(limit: limit)
                    }
                case .request(var request, let keepAlive):
                    if connection.reservedBody > 0 {
                        lock.withLock { bufferedBodyBytes -= connection.reservedBody }
                        connection.reservedBody = 0
                    }
                    request.preflightNote = connection.preflightNote
                    connection.preflightNote = nil
                    connection.processing = true
                    dispatch(Job(fd: connection.fd, request: request, keepAlive: keepAlive))
                    return
                }
            }
        }

        func read(_ connection: Connection, now: Double) {
            let rate = receiveRate()
            let budget = rate > 0 ? min(readBuffer.count, Int(allowance), share) : readBuffer.count
            guard budget > 0 else { return }
            let n = readBuffer.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, budget, 0) }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
                closeConnection(connection)
                return
            }
            if n == 0 {
                // The peer finished sending. A request cut short is refused, never processed.
                if connection.parser.isMidRequest && !connection.processing {
                    refuse(connection, .malformed, "the request ended early (fewer bytes than announced)")
                } else if !connection.processing {
                    closeConnection(connection)
                }
                return
            }
            touch(connection, now: now)
            if rate > 0 {
                allowance -= Double(n)
                // The limit slows the body down on purpose: it is timed from its last bytes.
                if connection.parser.isMidRequest { connection.deadline = max(connection.deadline, now + limits.headTimeout) }
            }
            if !connection.parser.isMidRequest { connection.deadline = now + limits.headTimeout }
            readBuffer.withUnsafeBytes { connection.parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            advance(connection, now: now)
        }

        while !lock.withLock({ stopped }) {
            let now = Self.now()
            let rate = receiveRate()
            if rate > 0 {
                allowance = min(Double(rate) / 4, allowance + (now - refilledAt) * Double(rate))
            }
            refilledAt = now
            // With the link's allowance spent, no connection is read until it refills.
            let throttled = rate > 0 && allowance < 1
            var fds: [pollfd] = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            if now >= acceptPausedUntil { fds.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0)) }
            var earliest = throttled ? now + min(0.25, max(0.005, (1 - allowance) / Double(rate))) : now + 1
            // A connection whose request is with a worker is not watched until the reply is ready.
            var watched = Array(connections.values)
            if rate > 0, !watched.isEmpty {
                watched.sort { $0.fd < $1.fd }
                turn = (turn + 1) % watched.count
                watched = Array(watched[turn...] + watched[..<turn])
            }
            for connection in watched where !connection.processing {
                if throttled && connection.output.isEmpty && connection.stream == nil {
                    connection.deadline = max(connection.deadline, now + limits.headTimeout)
                    continue
                }
                // Waiting for a piece of its reply: watched for nothing but hang-ups and deadlines.
                let events =
                    !connection.output.isEmpty ? Int16(POLLOUT) : connection.stream != nil ? Int16(0) : Int16(POLLIN)
                fds.append(pollfd(fd: connection.fd, events: events, revents: 0))
                earliest = min(earliest, connection.deadline)
            }
            let timeout = Int32(max(0, min(1000, (earliest - now) * 1000)).rounded(.up))
            let ready = poll(&fds, nfds_t(fds.count), max(timeout, 1))
            if ready < 0 && errno != EINTR {
                FileHandle.standardError.write(Data("formsync server: poll: \(String(cString: strerror(errno)))\n".utf8))
                usleep(10_000)
                continue
            }
            let after = Self.now()
            if rate > 0 {
                let readable = fds.filter { $0.fd != wake && $0.fd != listener && $0.revents & Int16(POLLIN) != 0 }.count
                share = max(512, Int(allowance) / max(1, readable))
            }
            for entry in fds where entry.revents != 0 {
                if entry.fd == wake {
                    Self.drain(wake)
                    let (done, pieces) = lock.withLock {
                        () -> ([(fd: Int32, response: HTTPResponse?, keepAlive: Bool)], [Refill]) in
                        defer {
                            finished = []
                            refilled = []
                        }
                        return (finished, refilled)
                    }
                    for piece in pieces {
                        guard let connection = connections[piece.fd], connection.serial == piece.serial, let stream = connection.stream
                        else { continue }
                        connection.refilling = false
                        guard case .success(let data) = piece.result, data.count == piece.count else {
                            // The body cannot be what its Content-Length promised: the client
                            // sees the connection end early, never other bytes.
                            if case .failure(let error) = piece.result {
                                FileHandle.standardError.write(Data("formsync server: a streamed reply failed: \(error)\n".utf8))
                            }
                            closeConnection(connection)
                            continue
                        }
                        connection.output.append(contentsOf: data)
                        connection.stream = (stream.body, stream.next + Int64(data.count), stream.end)
                        flush(connection)
                        if connections[piece.fd] != nil && connection.stream == nil && connection.output.isEmpty
                            && !connection.closeAfterWrite
                        {
                            advance(connection, now: after)
                        }
                    }
                    for (fd, response, keepAlive) in done {
                        guard let connection = connections[fd] else { continue }
                        connection.processing = false
                        touch(connection, now: after)
                        connection.deadline = after + limits.idleTimeout
                        guard let response else {
                            // The reply is lost: cut off after its head and the first bytes of
                            // its body. A connection that ends before any byte of a reply is
                            // not a lost reply to libcurl: it resends the request on a fresh
                            // connection, which URLSession on Linux sends without its body, so
                            // the exchange would stall until a timeout instead of failing.
                            connection.output += Self.lostReply
                            connection.closeAfterWrite = true
                            flush(connection)
                            continue
                        }
                        respond(connection, response, keepAlive: keepAlive)
                        if connections[fd] != nil && keepAlive && connection.output.isEmpty && connection.stream == nil {
                            advance(connection, now: after)
                        }
                    }
                } else if entry.fd == listener {
                    acceptAll(now: after)
                } else if let connection = connections[entry.fd] {
                    if entry.revents & Int16(POLLOUT) != 0 {
                        flush(connection)
                        if connections[entry.fd] != nil && connection.output.isEmpty && connection.stream == nil
                            && !connection.closeAfterWrite
                        {
                            advance(connection, now: after)
                        }
                    }
                    if connections[entry.fd] != nil, entry.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, !connection.processing,
                        connection.stream == nil
                    {
                        read(connection, now: after)
                    }
                }
            }
            lock.withLock {
                streamingCount = streaming
                streamBytesHeld = streamInUse
            }
            // Deadlines: a head or body too slow gets 408; an idle keep-alive is closed quietly.
            for connection in Array(connections.values) where !connection.processing && connection.deadline <= after {
                if connection.parser.isMidRequest {
                    refuse(connection, .timeout, "the request took too long to arrive")
                    if connections[connection.fd] != nil { closeConnection(connection) }
                } else {
                    closeConnection(connection)
                }
            }
        }
        for connection in Array(connections.values) { closeConnection(connection) }
        close(listener)
        lock.withLock {
            close(self.wake.read)
            close(self.wake.write)
            self.wake = (-1, -1)
            self.listener = -1
        }
        loopEnded.signal()
    }

    // MARK: Plumbing

    /// What a lost reply sends before the connection ends: a head that promises more body
    /// than follows, which every client reads as a reply cut short.
    static let lostReply = Array(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 64\r\nConnection: close\r\n\r\nlost".utf8)

    static func serialize(_ response: HTTPResponse, keepAlive: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        serialize(response, keepAlive: keepAlive, into: &bytes)
        return bytes
    }

    /// Appends the response's bytes to `output`, its body copied once (a page of the feed is
    /// megabytes: each copy more is a fresh allocation and its page faults).
    static func serialize(_ response: HTTPResponse, keepAlive: Bool, into output: inout [UInt8]) {
        var head = "HTTP/1.1 \(response.status) \(HTTPResponse.reason(response.status))\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        // A 204 has no content and so no Content-Length (docs/PROTOCOL.md, "Standards").
        if response.status != 204 { head += "Content-Length: \(response.stream?.count ?? Int64(response.body.count))\r\n" }
        head += keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
        let body = response.status == 204 ? 0 : response.body.count
        output.reserveCapacity(output.count + head.utf8.count + body)
        output.append(contentsOf: head.utf8)
        if body > 0 { response.body.withUnsafeBytes { output.append(contentsOf: $0) } }
    }

    private static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL, 0)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    private static func poke(_ fd: Int32) -> Int {
        var byte: UInt8 = 1
        return write(fd, &byte, 1)
    }

    private static func drain(_ fd: Int32) {
        var bytes = [UInt8](repeating: 0, count: 256)
        while bytes.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
    }
}

/// Why the server could not start.
public enum ServerError: Error, CustomStringConvertible {
    case socket(String)
    case storage(String)

    public var description: String {
        switch self {
        case .socket(let message), .storage(let message): return message
        }
    }
}
