import FormSyncCommandLine

/// Every rule docs/PROTOCOL.md states that `formsync conformance` knows of, with the section
/// that states it: what each check enforces, and (`--list`) what no check covers, and why.
struct ConformanceRule: Sendable, Hashable {
    /// The PROTOCOL.md section, as its heading reads.
    var section: String
    var text: String
    /// Why no check covers it; nil for a rule the suite checks.
    var notChecked: String?

    init(_ section: String, _ text: String, notChecked: String? = nil) {
        self.section = section
        self.text = text
        self.notChecked = notChecked
    }
}

enum Rules {
    static let syntax = "§1 Syntax of what the client sends"
    static let limits = "§1 Limits"
    static let submissions = "§2 POST <form endpoint>"
    static let files = "§2 POST /files"
    static let uploads = "§2 Resumable uploads"
    static let health = "§2 GET /health"
    static let refresh = "§2 POST /auth/refresh"
    static let devices = "§2 Devices and credentials"
    static let support = "§2 Support bundles"
    static let records = "§2 Records and the change feed"
    static let recordForms = "§2 Forms that create or edit a record"
    static let documents = "§2 GET /documents/<document id>"
    static let access = "§2 Access rules"
    static let ledger = "§3 The idempotency ledger"
    static let problems = "§5 Error codes"
    static let deferred = "§2 Deferred files"
    static let lookup = "§2 Looking a file up by digest"
    static let download = "§2 GET /files/<id>"
    static let fieldErrors = "§6 Field errors"
    static let backOfficeHalf = "§2 The back office's half: submissions, history and review"
    static let webhooks = "§2 Webhooks"
    static let listRecordForms = "§2 Several records from one submission"
    static let deleteForms = "§2 Forms that delete a record"
    static let waiting = "§2 Waiting for changes: GET /changes?…&wait=<seconds>"
    static let subscribing = "§2 Subscriptions: GET /changes?…&subscription=<json>"
    static let compactPages = "§2 Compact pages: GET /changes with Accept: application/vnd.formsync.feed"

    static let healthAnswers = ConformanceRule(health, "GET /health answers {service: formsync, status: ok, protocol: 1} without a token")
    static let refreshTrades = ConformanceRule(refresh, "POST /auth/refresh trades the refresh token for an access token")
    static let refreshUnknown = ConformanceRule(refresh, "an unknown refresh token is 401 bad-token")
    static let badToken = ConformanceRule(syntax, "a write with a bad token is 401 and not applied")
    static let badKey = ConformanceRule(syntax, "an Idempotency-Key outside the identifier syntax is 400")
    static let badDocument = ConformanceRule(syntax, "a FormSync-Document outside the identifier syntax is 400")
    static let badFormHeader = ConformanceRule(syntax, "a malformed FormSync-Form is 400 bad-form-header")
    static let controlCharacter = ConformanceRule(syntax, "a header value holding a control character is 400")
    static let twoLengths = ConformanceRule(syntax, "a head naming Content-Length twice, or with Transfer-Encoding, is 400")
    static let bodyTooLarge = ConformanceRule(limits, "a body announced past the route's limit is 413, decided from the head")
    static let shortBody = ConformanceRule(limits, "a body shorter than its Content-Length is refused and not applied")
    static let headTooLarge = ConformanceRule(limits, "a head over the server's limit (16 KiB, or 100 fields) is 431")
    static let longTarget = ConformanceRule(limits, "a request target over 4,096 bytes is 400")
    static let unsupportedEncoding = ConformanceRule(problems, "a transfer coding other than chunked is 501 unsupported-encoding")
    static let busy = ConformanceRule(
        limits, "past the open-connection limit, with none idle, a connection is answered 503 with Retry-After",
        notChecked: "it needs thousands of connections held open at once (4,096 on the reference server)")
    static let slowHead = ConformanceRule(
        limits, "a head or body that takes too long is 408",
        notChecked: "it takes the server's own deadline (10 s for the reference server) per case")

    static let createAcknowledged = ConformanceRule(submissions, "a create is acknowledged with 2xx JSON echoing the document id")
    static let createVersion = ConformanceRule(submissions, "the create carries an ETag and a positive id")
    static let repeatAcknowledged = ConformanceRule(
        submissions, "a create repeated with the same content under a new key is 200, applied once")
    static let otherContent = ConformanceRule(
        submissions, "a create with other content for a held document is 409 document-exists with the record and ETag")
    static let ifMatchNew = ConformanceRule(submissions, "an edit (If-Match) of a document that does not exist is 404 no-such-document")
    static let formBinding = ConformanceRule(
        submissions, "a document id used under another form is 409 document-form-mismatch, never with the other record")
    static let editApplied = ConformanceRule(submissions, "an edit with the current If-Match is applied with a new ETag")
    static let editStale = ConformanceRule(submissions, "an edit with a stale If-Match is 412 with the current record and ETag")
    static let authority = ConformanceRule(
        submissions,
        "an edit that changes a server-owned field (authority: server) is 409 authority-conflict with the record and ETag, not applied")
    static let invalidPayload = ConformanceRule(
        fieldErrors, "a payload breaking a rule is 422 invalid-payload with JSON Pointers to the fields")
    static let fieldRuleKinds = ConformanceRule(
        fieldErrors,
        "each kind of field rule in the server's specs is enforced: a payload breaking that rule alone is 422 naming the field and the rule's code"
    )
    static let wrongPath = ConformanceRule(submissions, "a path that does not match the payload is 404")
    static let unknownForm = ConformanceRule(submissions, "a form the server does not accept is 404 unknown-form")
    static let newerVersion = ConformanceRule(submissions, "a form version newer than the server knows is 422 unknown-form-version")
    static let olderVersion = ConformanceRule(
        submissions, "a payload of an older form version is accepted, brought up by the form's upgraders")
    static let placeholder = ConformanceRule(submissions, "a negative id (a device placeholder) is 422")

    static let fileAcknowledged = ConformanceRule(files, "an upload with its Content-Digest is acknowledged")
    static let fileAgain = ConformanceRule(files, "the same bytes under the same file document again are 200, stored once")
    static let fileOther = ConformanceRule(files, "other bytes under a stored file document are 409 document-exists")
    static let fileWrongDigest = ConformanceRule(files, "an upload whose Content-Digest does not match is 400")
    static let fileNoDigest = ConformanceRule(files, "an upload without Content-Digest is 400")

    static let uploadCreate = ConformanceRule(uploads, "POST /uploads creates the upload with its Location and Upload-Offset 0")
    static let uploadAppend = ConformanceRule(uploads, "PATCH appends at the offset and answers the new Upload-Offset")
    static let uploadWrongOffset = ConformanceRule(uploads, "a PATCH at another offset is 409 with the server's Upload-Offset")
    static let uploadHead = ConformanceRule(uploads, "HEAD answers the offset the server holds")
    static let uploadFoundAgain = ConformanceRule(uploads, "creating the same document's upload again finds it, with its offset")
    static let uploadComplete = ConformanceRule(uploads, "the completing PATCH stores the file and acknowledges the document with its id")
    static let uploadFinishedAgain = ConformanceRule(uploads, "creating a finished upload again answers the stored file")
    static let uploadDigest = ConformanceRule(uploads, "bytes that do not match Repr-Digest are 400 digest-mismatch at completion")
    static let uploadTooLong = ConformanceRule(uploads, "an append past Upload-Length is 400 upload-too-long")
    static let uploadIncomplete = ConformanceRule(uploads, "a completing append that does not reach Upload-Length is 400 upload-incomplete")
    static let noSuchUpload = ConformanceRule(uploads, "HEAD of an upload that does not exist is 404 no-such-upload")
    static let fileOnUpload = ConformanceRule(uploads, "POST /files under an unfinished upload's document id is 409 document-exists")
    static let uploadExpiry = ConformanceRule(
        uploads, "an unfinished upload with no append for 24 hours expires (404 no-such-upload)",
        notChecked: "it takes 24 hours")
    static let uploadQuota = ConformanceRule(uploads, "past the unfinished-upload quota POST /uploads is 429 upload-quota with Retry-After")

    static let feedCarries = ConformanceRule(records, "GET /changes carries the record a create made, with its version and fields")
    static let recordAnswers = ConformanceRule(records, "GET /records/<type>/<id> answers the record with its ETag")
    static let recordMissing = ConformanceRule(records, "GET /records/<type>/<id> of a record that does not exist is 404 no-such-record")
    static let feedResumes = ConformanceRule(records, "the feed resumes after its cursor with the edited record, once")
    static let badCursor = ConformanceRule(records, "a cursor the server never issued is 400 bad-cursor (or 410)")
    static let cursorAhead = ConformanceRule(records, "a cursor ahead of the server's feed is 410 cursor-expired")
    static let badLimit = ConformanceRule(records, "limit=0 is 400 bad-limit")
    static let bigLimit = ConformanceRule(records, "a limit above 1,000 is served (as 1,000), not refused")
    static let feedScope = ConformanceRule(
        records, "a record in one principal's scope reaches no other principal's device, by the feed or by GET /records")
    static let feedDeletions = ConformanceRule(
        records, "a record deleted or moved out of a scope is a removal (deleted: true) in that scope's feed",
        notChecked: "the protocol has no deletion a client can make; the reference server's tests cover it")
    static let editNoIfMatch = ConformanceRule(recordForms, "an edit of a record without If-Match is 428")
    static let editRecord = ConformanceRule(
        recordForms, "an edit of a record under its current ETag is applied, with the new version and fields in `entity`")
    static let editRecordStale = ConformanceRule(
        recordForms, "an edit of a record under a stale ETag is 412 with the record as the form sees it")
    static let editRecordMissing = ConformanceRule(recordForms, "an edit of a record that does not exist is 404")
    static let invalidRecord = ConformanceRule(
        recordForms, "a create whose record would break the record's rules is 422 invalid-record, nothing created",
        notChecked: "it needs a form whose payload is valid while the record it makes is not, which a spec cannot be asked for")

    static let documentMissing = ConformanceRule(documents, "GET /documents/<id> of a document that does not exist is 404")

    static let noWorkspace = ConformanceRule(access, "a request without FormSync-Workspace is 400 bad-workspace")
    static let foreignWorkspace = ConformanceRule(
        access, "a request naming a workspace the token is not issued for is 403 (421 on a one-workspace server)")
    static let otherPrincipal = ConformanceRule(
        access, "another principal of the workspace reaches none of a principal's documents, files and uploads")
    static let otherPrincipalNothing = ConformanceRule(access, "a refusal to another principal carries nothing of the document")
    static let backOffice = ConformanceRule(access, "the back office reaches every document, file and upload of its workspace")

    static let replay = ConformanceRule(
        ledger, "the same request under the same key replays the recorded reply, with Idempotent-Replayed: true")
    static let keyReused = ConformanceRule(ledger, "another body under a used key is 422 key-reused")
    static let keyScoped = ConformanceRule(ledger, "the same key from another principal is another key")
    static let keyRetention = ConformanceRule(ledger, "a key is kept at least 30 days", notChecked: "it takes 30 days")
    static let tokenDigests = ConformanceRule(
        refresh, "a server stores only digests of its tokens, in files only its owner reads",
        notChecked: "a server's storage cannot be seen from the wire; the reference server's tests check it")
    static let keyInFlight = ConformanceRule(
        ledger, "a key still in flight is 409 key-in-flight with Retry-After",
        notChecked: "it needs a request held on the server; checked only when two racing requests happen to meet (printed when they do)")
    static let problemJSON = ConformanceRule(problems, "an error reply is application/problem+json with its code")

    static let pendingAccepted = ConformanceRule(
        deferred, "a submission naming a file by digest, size and type is stored with the file pending (no id)")
    static let pendingListed = ConformanceRule(deferred, "GET /pending-files lists the pending file with its document and pointer")
    static let pendingCompleted = ConformanceRule(
        deferred, "the upload of those bytes completes the document: a new version naming the file by id")
    static let pendingGone = ConformanceRule(deferred, "a completed file is no longer listed as pending")
    static let pendingMismatch = ConformanceRule(
        deferred, "an upload whose size or type is not what a document announced is 422 file-mismatch with the pointer")
    static let pendingUnsupported = ConformanceRule(
        deferred, "a server that does not list deferred-files in /health refuses a pending file with 422")
    static let fileReferenceChecked = ConformanceRule(
        deferred, "a file id whose size differs from the stored file is 422 file-mismatch with the pointer")
    static let lookupFound = ConformanceRule(lookup, "GET /files/sha-256/<hex> of stored bytes is 200 with the file's id and size")
    static let lookupMissing = ConformanceRule(lookup, "bytes the workspace does not hold are 404 no-such-file; a malformed digest is 400")
    static let downloadRange = ConformanceRule(
        download, "a stored file is served whole, and a range as 206 with Content-Range and Repr-Digest; a range past its end is 416")

    static let enrolmentMade = ConformanceRule(devices, "POST /auth/enrolments (back office) answers 201 with a code of 20 symbols")
    static let enrolTrades = ConformanceRule(
        devices, "POST /auth/enrol trades the code for a device's credentials, its access token good at once")
    static let enrolOnce = ConformanceRule(devices, "a spent code is 401 enrolment-used; a code never made is 401 enrolment-unknown")
    static let enrolExpired = ConformanceRule(
        devices, "an expired code is 401 enrolment-expired", notChecked: "an enrolment lives a minute at least; the run does not wait")
    static let refreshRotates = ConformanceRule(
        devices, "a refresh answers a new refresh token, and the one sent is taken once more while its successor is unused")
    static let refreshReuse = ConformanceRule(
        devices, "a retired refresh token used after its successor revokes the device (401 device-revoked)")
    static let revokedRefused = ConformanceRule(devices, "a revoked device's access and refresh tokens are 401 device-revoked")
    static let revocationListed = ConformanceRule(
        devices,
        "GET /auth/devices lists the device with its revocation; revoking a device the workspace does not hold is 404 no-such-device")
    static let backOfficeOnly = ConformanceRule(
        devices, "a device's token on a back-office route is 403 back-office-only; a principal's revocation names its devices")
    static let supportRequested = ConformanceRule(
        support, "POST /support/requests (back office) answers 201, and the device's next page of the feed carries the request")
    static let supportAnswered = ConformanceRule(
        support,
        "the device's bundle answering it is 201 and listed by GET /support/bundles; answering a request not its own is 404 no-such-support-request; a device reading the bundles is 403"
    )

    static let feedCarriesSubmissions = ConformanceRule(
        backOfficeHalf, "GET /submissions (back office) carries a document's accepted version with its author and record; a device is 403")
    static let historyNamesAuthors = ConformanceRule(
        backOfficeHalf, "GET /documents/<id>/history lists the document's versions from its acceptance, each with its author and time")
    static let conflictNamesAuthor = ConformanceRule(
        backOfficeHalf, "a 412 stale-version names the author of the version met (last_change)")
    static let reviewReachesOwner = ConformanceRule(
        backOfficeHalf, "POST /documents/<id>/reviews answers 201, and the owner's next page of the feed carries the review")
    static let reviewStale = ConformanceRule(backOfficeHalf, "a review of a version that is not the current one is 412 stale-version")
    static let webhookRegistered = ConformanceRule(
        webhooks,
        "POST /webhooks answers 201 with its secret once; GET /webhooks lists it without; a device is 403; DELETE removes it, then 404 no-such-webhook"
    )
    static let webhookDelivered = ConformanceRule(
        webhooks, "a document accepted after the registration is delivered to the receiver with FormSync-Event-ID and a valid signature")

    static let listRecords = ConformanceRule(
        listRecordForms,
        "a submission whose list creates records is answered with created_records, one record per item (list, index, id, record), each in the feed; the same document again names the same records"
    )
    static let deleteRecord = ConformanceRule(
        deleteForms,
        "a delete form is 428 without If-Match and 412 with a stale one; with the record's version it is 200 with the record named deleted, the feed carries the deletion, and the same document again is 200"
    )
    static let waitForChanges = ConformanceRule(
        waiting,
        "GET /changes?wait= holds an empty page until a change it may see commits and answers with it; with nothing to see it answers the empty page at its end; a wait that is not a number is 400 bad-query"
    )

    static let subscriptions = ConformanceRule(
        subscribing,
        "GET /changes?subscription= serves only the subscribed type's records; the device's own feed holds none of a type with subscribe_by; an unknown field or a type without subscribe_by is 400 bad-subscription"
    )

    static let compactFeed = ConformanceRule(
        compactPages,
        "GET /changes accepting application/vnd.formsync.feed is a compact page with the JSON page's changes (type, id, version, record), cursor and more; a limit above 1000 is served, not refused"
    )

    /// Every rule, in the order of PROTOCOL.md.
    static let all: [ConformanceRule] = [
        badToken, badKey, badDocument, badFormHeader, controlCharacter, twoLengths, bodyTooLarge, shortBody, headTooLarge, longTarget, busy,
        slowHead,
        createAcknowledged, createVersion, repeatAcknowledged, otherContent, ifMatchNew, formBinding, editApplied, editStale, authority,
        wrongPath,
        unknownForm, newerVersion, olderVersion, placeholder,
        fileAcknowledged, fileAgain, fileOther, fileWrongDigest, fileNoDigest,
        uploadCreate, uploadAppend, uploadWrongOffset, uploadHead, uploadFoundAgain, uploadComplete, uploadFinishedAgain, uploadDigest,
        uploadTooLong,
        uploadIncomplete, noSuchUpload, fileOnUpload, uploadExpiry, uploadQuota,
        pendingAccepted, pendingListed, pendingCompleted, pendingGone, pendingMismatch, pendingUnsupported, fileReferenceChecked,
        lookupFound, lookupMissing, downloadRange,
        healthAnswers, refreshTrades, refreshUnknown, tokenDigests,
        enrolmentMade, enrolTrades, enrolOnce, enrolExpired, refreshRotates, refreshReuse, revokedRefused, revocationListed, backOfficeOnly,
        supportRequested, supportAnswered,
        feedCarries, recordAnswers, recordMissing, feedResumes, badCursor, cursorAhead, badLimit, bigLimit, feedScope, feedDeletions,
        waitForChanges, subscriptions, compactFeed, editNoIfMatch, editRecord, editRecordStale, editRecordMissing, invalidRecord,
        deleteRecord,
        listRecords,
        documentMissing,
        feedCarriesSubmissions, historyNamesAuthors, conflictNamesAuthor, reviewReachesOwner, reviewStale, webhookRegistered,
        webhookDelivered,
        noWorkspace, foreignWorkspace, otherPrincipal, otherPrincipalNothing, backOffice,
        replay, keyReused, keyScoped, keyRetention, keyInFlight,
        problemJSON, unsupportedEncoding, invalidPayload, fieldRuleKinds,
    ]
}
