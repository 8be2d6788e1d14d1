import FormSpec
import FormSyncCodegen
import FormSyncProtocol

/// The wire protocol as an OpenAPI 3.1 description (docs/openapi.yaml), made from the route
/// table (`Route`: paths, methods, parameters, success statuses), the error codes
/// (`ProblemCode`), the acknowledgement's members (`Acknowledgement`) and, for each form's
/// endpoint, the JSON Schema of its payload (`JSONSchemaGenerator`): so that a backend team can
/// generate a server skeleton, or a client, in its own language. Nothing here is written by
/// hand twice: a new route or code appears in the description by being added to the table.
public enum OpenAPIGenerator {
    /// The description of a server that accepts `forms` and holds `records`.
    /// - Parameter version: the version of the description (`info.version`).
    public static func document(forms: [FormDefinition], records: [RecordDefinition], version: String) -> JSONValue {
        var paths: [(String, JSONValue)] = []
        var byPath: [String: [(String, JSONValue)]] = [:]
        var order: [String] = []
        for route in Route.allCases {
            guard let path = route.openAPIPath else { continue }
            if byPath[path] == nil { order.append(path) }
            byPath[path, default: []].append(
                (route.method.lowercased(), operation(route, id: route.rawValue, summary: route.summary, body: requestBody(route))))
        }
        for path in order { paths.append((path, .object(byPath[path] ?? []))) }
        var endpoints: [String: [FormDefinition]] = [:]
        for form in forms where form.endpoint.hasPrefix("/") {
            endpoints[form.endpoint, default: []].append(form)
        }
        for endpoint in endpoints.keys.sorted() {
            let named = (endpoints[endpoint] ?? []).sorted { $0.name < $1.name }
            let schemas = named.map { JSONValue.object([("$ref", .string("#/components/schemas/\(formSchemaName($0))"))]) }
            let schema = schemas.count == 1 ? schemas[0] : .object([("oneOf", .array(schemas))])
            let submission = operation(
                .submission, id: "submit" + named.map(\.name).joined(),
                summary: "\(Route.submission.summary) (\(named.map(\.name).joined(separator: ", ")))",
                extra: placeholders(in: endpoint).map {
                    RouteParameter($0, in: .path, required: true, "The payload's \($0), as the form's endpoint names it.")
                }, body: jsonBody(schema))
            paths.append((endpoint, .object([("post", submission)])))
        }
        var schemas = protocolSchemas
        schemas += JSONSchemaGenerator.sharedDefinitions.map { ($0.name, $0.schema) }
        for form in forms.sorted(by: { $0.name < $1.name }) {
            schemas.append((formSchemaName(form), component(JSONSchemaGenerator.schema(for: form))))
        }
        for record in records.sorted(by: { $0.name < $1.name }) {
            schemas.append(("record.\(record.name)", component(JSONSchemaGenerator.schema(for: record))))
        }
        return .object([
            ("openapi", .string("3.1.0")),
            (
                "info",
                .object([
                    ("title", .string("FormSync wire protocol")),
                    ("version", .string(version)),
                    (
                        "description",
                        .string(
                            "Made by `formsync openapi` from the protocol's route table and the server's form specs. docs/PROTOCOL.md is the reference: it says what each reply means and what a client does with it."
                        )
                    ),
                ])
            ),
            ("paths", .object(paths)),
            (
                "components",
                .object([
                    ("securitySchemes", .object([("bearer", .object([("type", .string("http")), ("scheme", .string("bearer"))]))])),
                    ("schemas", .object(schemas)),
                ])
            ),
        ])
    }

    static func formSchemaName(_ form: FormDefinition) -> String { "form.\(form.name)" }

    private static func ref(_ name: String) -> JSONValue { .object([("$ref", .string("#/components/schemas/\(name)"))]) }

    private static func jsonBody(_ schema: JSONValue) -> JSONValue {
        .object([("required", .bool(true)), ("content", .object([("application/json", .object([("schema", schema)]))]))])
    }

    private static func requestBody(_ route: Route) -> JSONValue? {
        switch route.body {
        case .none: return nil
        case .message:
            switch route {
            case .enrol: return jsonBody(ref("EnrolRequest"))
            case .enrolmentCreate: return jsonBody(ref("EnrolmentRequest"))
            case .revocation: return jsonBody(ref("RevocationRequest"))
            case .supportRequestCreate: return jsonBody(ref("SupportRequestCreate"))
            case .webhookCreate: return jsonBody(ref("WebhookCreate"))
            default: return jsonBody(ref("RefreshRequest"))
            }
        case .payload where route == .supportBundleUpload: return jsonBody(ref("SupportBundle"))
        case .payload where route == .review: return jsonBody(ref("ReviewRequest"))
        case .payload: return jsonBody(.object([("type", .string("object"))]))
        case .file:
            return .object([
                ("required", .bool(true)),
                (
                    "content",
                    .object([
                        (
                            "*/*",
                            .object([
                                (
                                    "schema",
                                    .object([("type", .string("string")), ("contentMediaType", .string("application/octet-stream"))])
                                )
                            ])
                        )
                    ])
                ),
            ])
        }
    }

    /// The names of a form endpoint's `{placeholders}`, in order.
    static func placeholders(in endpoint: String) -> [String] {
        endpoint.split(separator: "/").compactMap { part in
            part.hasPrefix("{") && part.hasSuffix("}") && part.count > 2 ? String(part.dropFirst().dropLast()) : nil
        }
    }

    /// One operation: its id, summary, parameters (the route's, then `extra`), security, body
    /// and replies.
    private static func operation(
        _ route: Route, id: String, summary: String, extra: [RouteParameter] = [], body: JSONValue?
    ) -> JSONValue {
        var pairs: [(String, JSONValue)] = [("operationId", .string(id)), ("summary", .string(summary))]
        let parameters = (route.parameters + extra).map { parameter -> JSONValue in
            .object([
                ("name", .string(parameter.name)), ("in", .string(parameter.location.rawValue)),
                ("required", .bool(parameter.required || parameter.location == .path)),
                ("description", .string(parameter.summary)), ("schema", .object([("type", .string("string"))])),
            ])
        }
        if !parameters.isEmpty { pairs.append(("parameters", .array(parameters))) }
        pairs.append(("security", .array(route.needsAccessToken ? [.object([("bearer", .array([]))])] : [])))
        if let body { pairs.append(("requestBody", body)) }
        var responses: [(String, JSONValue)] = route.successes.map { status in (String(status), success(route, status: status)) }
        responses.append(
            (
                "default",
                .object([
                    ("description", .string("A problem (RFC 9457): its code says what went wrong (docs/PROTOCOL.md, §5).")),
                    ("content", .object([("application/problem+json", .object([("schema", ref("Problem"))]))])),
                ])
            ))
        pairs.append(("responses", .object(responses)))
        return .object(pairs)
    }

    private static func success(_ route: Route, status: Int) -> JSONValue {
        func json(_ name: String, _ description: String) -> JSONValue {
            .object([("description", .string(description)), ("content", .object([("application/json", .object([("schema", ref(name))]))]))])
        }
        func headers(_ description: String, _ names: [String]) -> JSONValue {
            .object([
                ("description", .string(description)),
                ("headers", .object(names.map { ($0, .object([("schema", .object([("type", .string("string"))]))])) })),
            ])
        }
        switch (route, status) {
        case (.health, _): return json("Health", "The server answers.")
        case (.refresh, _): return json("Credentials", "A new access token, and the refresh token that replaces the one sent.")
        case (.enrol, _): return json("Credentials", "The device's first credentials.")
        case (.enrolmentCreate, _): return json("Enrolment", "The code, shown once.")
        case (.devices, _): return json("DeviceList", "The devices.")
        case (.revocation, _): return json("Revocation", "The devices revoked now.")
        case (.supportRequestCreate, _): return json("SupportRequest", "The request, open until a bundle answers it.")
        case (.supportBundles, _): return json("SupportBundleList", "The bundles, newest first.")
        case (.supportBundleUpload, _): return json("SupportBundleReceipt", "The bundle, kept.")
        case (.fileLookup, _): return json("FileFound", "The workspace holds a file with these bytes.")
        case (.fileFetch, 206):
            return .object([
                ("description", .string("The range asked for.")),
                ("headers", .object([("Content-Range", .object([("schema", .object([("type", .string("string"))]))]))])),
                ("content", .object([("*/*", .object([]))])),
            ])
        case (.fileFetch, _): return .object([("description", .string("The whole file.")), ("content", .object([("*/*", .object([]))]))])
        case (.pendingFiles, _): return json("PendingFiles", "The files still pending.")
        case (.changes, _):
            // A server that lists compact-feed answers a request accepting it with the compact
            // form of the same page (docs/PROTOCOL.md, "Compact pages").
            return .object([
                ("description", .string("One page of the feed; compact to a request that accepts it (feature compact-feed).")),
                (
                    "content",
                    .object([
                        ("application/json", .object([("schema", ref("ChangePage"))])),
                        (CompactFeedPage.mediaType, .object([])),
                    ])
                ),
            ])
        case (.record, _): return json("Entity", "The record.")
        case (.document, _): return json("Acknowledgement", "The document as the server holds it.")
        case (.submissions, _): return json("SubmissionsPage", "One page of the submissions feed.")
        case (.documentHistory, _), (.recordHistory, _): return json("VersionHistory", "The history, oldest first.")
        case (.review, _): return json("Review", status == 201 ? "The review, kept." : "The same review, kept before.")
        case (.webhookCreate, _): return json("Webhook", "The receiver, with its signing secret (shown this once).")
        case (.webhooks, _): return json("WebhookList", "The receivers, without their secrets.")
        case (.webhookSecret, _): return json("Webhook", "The receiver, with its new secret (shown this once).")
        case (.webhookDelete, _): return json("Webhook", "The receiver removed.")
        case (.webhookDeliveries, _): return json("WebhookDeliveryList", "The deliveries, newest first.")
        case (.webhookResend, _): return json("WebhookDelivery", "The delivery, pending again.")
        case (.uploadCreate, 201):
            return headers(
                "The upload, created or found unfinished.", ["Location", ProtocolHeader.uploadOffset, ProtocolHeader.uploadLength])
        case (.uploadOffset, _), (.uploadAppend, 204):
            return headers(
                "The offset the server holds.", [ProtocolHeader.uploadOffset, ProtocolHeader.uploadLength, ProtocolHeader.uploadComplete])
        case (.fileUpload, _), (.uploadCreate, _), (.uploadAppend, _):
            return json("FileAcknowledgement", status == 201 ? "The file, stored now." : "The file, stored before.")
        case (.submission, _):
            return json("Acknowledgement", status == 201 ? "The document, created." : "The document, edited or repeated.")
        }
    }

    /// A payload schema as a component: its `$defs` are the shared components.
    static func component(_ schema: JSONValue) -> JSONValue {
        switch schema {
        case .object(let pairs):
            return .object(
                pairs.compactMap { key, value in
                    if key == "$schema" || key == "$id" || key == "$defs" { return nil }
                    if key == "$ref", case .string(let target) = value, target.hasPrefix("#/$defs/") {
                        return (key, .string("#/components/schemas/" + target.dropFirst("#/$defs/".count)))
                    }
                    return (key, component(value))
                })
        case .array(let items):
            return .array(items.map(component))
        default:
            return schema
        }
    }

    private static func object(_ properties: [(String, JSONValue)], required: [String]) -> JSONValue {
        .object([
            ("type", .string("object")), ("properties", .object(properties)), ("required", .array(required.map { .string($0) })),
        ])
    }

    private static let string: JSONValue = .object([("type", .string("string"))])
    private static let integer: JSONValue = .object([("type", .string("integer"))])
    private static let anyObject: JSONValue = .object([("type", .string("object"))])
    private static let strings: JSONValue = .object([("type", .string("array")), ("items", string)])
    private static let dateTime: JSONValue = .object([("type", .string("string")), ("format", .string("date-time"))])
    private static let verdict: JSONValue = .object([
        ("type", .string("string")), ("enum", .array(Review.Verdict.allCases.map { .string($0.rawValue) })),
    ])
    private static let event: JSONValue = .object([
        ("type", .string("string")), ("enum", .array(HistoryEvent.allCases.map { .string($0.rawValue) })),
    ])

    /// The schemas of the protocol's own messages.
    static var protocolSchemas: [(String, JSONValue)] {
        typealias A = Acknowledgement
        return [
            (
                "Problem",
                object(
                    [
                        ("type", string), ("title", string), ("status", integer), ("detail", string),
                        (
                            "code",
                            .object([("type", .string("string")), ("enum", .array(ProblemCode.allCases.map { .string($0.rawValue) }))])
                        ),
                        (
                            "errors",
                            .object([
                                ("type", .string("array")),
                                (
                                    "items",
                                    object(
                                        [("pointer", string), ("code", string), ("detail", string), ("document_id", string)],
                                        required: ["pointer", "code"])
                                ),
                            ])
                        ),
                    ], required: ["type", "title", "status", "code"])
            ),
            (
                "Acknowledgement",
                object(
                    [
                        (A.documentID, string), (A.id, integer), (A.form, string), (A.formVersion, integer),
                        (A.version, .object([("type", .string("string")), ("description", .string("The ETag of this version."))])),
                        (A.record, anyObject), (A.entity, ref("Entity")), (A.lastChange, ref("ChangeAuthor")),
                        (
                            A.createdRecords,
                            .object([
                                ("type", .string("array")), ("items", ref("CreatedRecord")),
                                ("description", .string("The records the submission's lists created, one per item.")),
                            ])
                        ),
                    ], required: [A.documentID, A.id, A.version])
            ),
            (
                "CreatedRecord",
                object(
                    [
                        (A.list, string), (A.position, integer), ("type", string), ("id", integer), ("version", integer),
                        ("record", anyObject), ("deleted", .object([("type", .string("boolean"))])),
                    ],
                    required: [A.list, A.position, "type", "id"])
            ),
            (
                "FileAcknowledgement",
                object(
                    [(A.documentID, string), (A.id, integer), (A.byteCount, integer), ("digest", string)],
                    required: [A.documentID, A.id, A.byteCount, "digest"])
            ),
            (
                "FileFound",
                object(
                    [("id", integer), ("byte_count", integer), ("digest", string), ("content_type", string)],
                    required: ["id", "byte_count", "digest"])
            ),
            (
                "Entity",
                object(
                    [("type", string), ("id", integer), ("version", integer), ("record", anyObject)],
                    required: ["type", "id", "version", "record"])
            ),
            (
                "Change",
                object(
                    [
                        ("id", integer), ("type", string), ("version", integer), ("record", anyObject),
                        ("deleted", .object([("type", .string("boolean"))])),
                        (
                            "outside",
                            .object([
                                ("type", .string("boolean")),
                                ("description", .string("In a subscription's page: the record no longer matches the subscription.")),
                            ])
                        ),
                    ],
                    required: ["id", "type"])
            ),
            (
                "ChangePage",
                object(
                    [
                        ("changes", .object([("type", .string("array")), ("items", ref("Change"))])), ("cursor", string),
                        ("more", .object([("type", .string("boolean"))])),
                        (
                            "remaining",
                            .object([
                                ("type", .string("integer")), ("minimum", .integer(0)), ("maximum", .integer(1_000_000)),
                                ("description", .string("With more: how many changes follow this page, counted up to a million.")),
                            ])
                        ),
                        ("support_request", ref("SupportRequest")),
                        ("reviews", .object([("type", .string("array")), ("items", ref("Review"))])),
                    ],
                    required: ["changes", "cursor", "more"])
            ),
            (
                "PendingFile",
                object(
                    [
                        ("document_id", string), ("pointer", string), ("digest", string), ("byte_count", integer), ("content_type", string),
                        ("since", .object([("type", .string("string")), ("format", .string("date-time"))])), ("form", string),
                        ("id", integer),
                    ], required: ["document_id", "pointer", "digest", "byte_count", "content_type", "since"])
            ),
            (
                "PendingFiles",
                object([("pending", .object([("type", .string("array")), ("items", ref("PendingFile"))]))], required: ["pending"])
            ),
            (
                "Health",
                object(
                    [
                        ("service", string), ("status", string), ("protocol", integer),
                        ("features", .object([("type", .string("array")), ("items", string)])),
                    ],
                    required: ["service", "status", "protocol", "features"])
            ),
            ("DeviceReport", object([("name", string), ("app_version", string), ("spec_version", string)], required: ["name"])),
            ("RefreshRequest", object([("refresh_token", string), ("device", ref("DeviceReport"))], required: ["refresh_token"])),
            (
                "EnrolRequest",
                object([("code", string), ("installation", string), ("device", ref("DeviceReport"))], required: ["code", "device"])
            ),
            (
                "Credentials",
                object(
                    [
                        ("device_id", string), ("principal", string), ("role", string), ("workspaces", strings), ("access_token", string),
                        ("token_type", string), ("expires_in", integer), ("refresh_token", string), ("refresh_expires_in", integer),
                    ],
                    required: [
                        "device_id", "principal", "role", "workspaces", "access_token", "token_type", "expires_in", "refresh_token",
                        "refresh_expires_in",
                    ])
            ),
            ("EnrolmentRequest", object([("principal", string), ("role", string), ("expires_in", integer)], required: ["principal"])),
            (
                "Enrolment",
                object(
                    [("code", string), ("principal", string), ("role", string), ("workspace", string), ("expires_at", dateTime)],
                    required: ["code", "principal", "role", "workspace", "expires_at"])
            ),
            (
                "DeviceSummary",
                object(
                    [
                        ("device_id", string), ("principal", string), ("role", string), ("workspaces", strings), ("name", string),
                        ("app_version", string), ("spec_version", string), ("enrolled_at", dateTime), ("last_seen_at", dateTime),
                        ("revoked_at", dateTime), ("revoked_reason", string),
                    ],
                    required: [
                        "device_id", "principal", "role", "workspaces", "name", "app_version", "spec_version", "enrolled_at",
                        "last_seen_at",
                    ])
            ),
            (
                "DeviceList",
                object([("devices", .object([("type", .string("array")), ("items", ref("DeviceSummary"))]))], required: ["devices"])
            ),
            ("RevocationRequest", object([("device_id", string), ("principal", string), ("reason", string)], required: [])),
            ("Revocation", object([("revoked", strings)], required: ["revoked"])),
            ("SupportRequestCreate", object([("device_id", string), ("reason", string)], required: ["device_id"])),
            (
                "SupportRequest",
                object(
                    [("id", integer), ("device_id", string), ("reason", string), ("requested_at", dateTime), ("answered_at", dateTime)],
                    required: ["id", "device_id", "reason", "requested_at"])
            ),
            (
                "SupportBundle",
                object(
                    [
                        ("formsync_bundle", integer), ("created_at", string), ("answering", integer), ("device", ref("DeviceReport")),
                        ("outbox_schema", integer), ("workspaces", strings), ("counts", anyObject), ("records_held", integer),
                        ("settings", anyObject), ("people", .object([("type", .string("array")), ("items", anyObject)])),
                        ("revoked", string), ("includes_payloads", .object([("type", .string("boolean"))])),
                        ("items", .object([("type", .string("array")), ("items", anyObject)])),
                    ],
                    required: [
                        "formsync_bundle", "created_at", "outbox_schema", "workspaces", "counts", "records_held", "settings", "people",
                        "includes_payloads", "items",
                    ])
            ),
            ("SupportBundleReceipt", object([("id", integer)], required: ["id"])),
            (
                "ChangeAuthor",
                object(
                    [
                        ("principal", string), ("device_id", string), ("at", dateTime), ("captured_at", dateTime),
                        (
                            "via",
                            .object([("type", .string("string")), ("enum", .array(ChangeAuthor.Via.allCases.map { .string($0.rawValue) }))])
                        ),
                        ("document_id", string),
                    ], required: ["at", "via"])
            ),
            (
                "ReviewIssue",
                object([("pointer", string), ("detail", string)], required: ["pointer", "detail"])
            ),
            (
                "ReviewRequest",
                object(
                    [
                        ("verdict", verdict), ("version", integer), ("comment", string),
                        ("issues", .object([("type", .string("array")), ("items", ref("ReviewIssue"))])),
                    ], required: ["verdict"])
            ),
            (
                "Review",
                object(
                    [
                        ("id", integer), ("document_id", string), ("version", integer), ("verdict", verdict), ("comment", string),
                        ("issues", .object([("type", .string("array")), ("items", ref("ReviewIssue"))])), ("reviewer", string),
                        ("at", dateTime),
                    ], required: ["id", "document_id", "version", "verdict", "comment", "issues", "reviewer", "at"])
            ),
            (
                "FieldChange",
                object([("pointer", string), ("old", .object([])), ("new", .object([]))], required: ["pointer"])
            ),
            (
                "VersionHistory",
                object(
                    [
                        ("document_id", string), ("type", string), ("id", integer),
                        (
                            "entries",
                            .object([
                                ("type", .string("array")),
                                (
                                    "items",
                                    object(
                                        [
                                            ("event", event), ("version", integer), ("author", ref("ChangeAuthor")),
                                            ("changes", .object([("type", .string("array")), ("items", ref("FieldChange"))])),
                                            ("review", ref("Review")),
                                        ], required: ["event", "version", "author", "changes"])
                                ),
                            ])
                        ),
                        ("truncated", .object([("type", .string("boolean"))])),
                    ], required: ["id", "entries", "truncated"])
            ),
            (
                "SubmissionFile",
                object(
                    [
                        ("pointer", string),
                        ("state", .object([("type", .string("string")), ("enum", .array([.string("stored"), .string("pending")]))])),
                        ("file_id", integer), ("digest", string), ("byte_count", integer), ("content_type", string),
                    ], required: ["pointer", "state"])
            ),
            (
                "SubmissionEvent",
                object(
                    [
                        ("event_id", integer), ("event", event), ("document_id", string), ("form", string), ("form_version", integer),
                        ("id", integer), ("version", integer), ("author", ref("ChangeAuthor")), ("record", anyObject),
                        ("files", .object([("type", .string("array")), ("items", ref("SubmissionFile"))])), ("review", ref("Review")),
                    ], required: ["event_id", "event", "document_id", "form", "form_version", "id", "version", "author"])
            ),
            (
                "WebhookCreate",
                object(
                    [
                        ("url", string), ("events", .object([("type", .string("array")), ("items", event)])),
                        ("forms", strings),
                    ], required: ["url"])
            ),
            (
                "Webhook",
                object(
                    [
                        ("id", integer), ("url", string), ("events", .object([("type", .string("array")), ("items", event)])),
                        ("forms", strings), ("created_by", string), ("created_at", dateTime), ("pending", integer), ("dead", integer),
                        ("secret", string), ("previous_secret_until", dateTime),
                    ], required: ["id", "url", "events", "forms", "created_by", "created_at", "pending", "dead"])
            ),
            (
                "WebhookList",
                object([("webhooks", .object([("type", .string("array")), ("items", ref("Webhook"))]))], required: ["webhooks"])
            ),
            (
                "WebhookDelivery",
                object(
                    [
                        ("id", integer), ("webhook_id", integer), ("event_id", integer), ("event", event), ("document_id", string),
                        (
                            "state",
                            .object([
                                ("type", .string("string")), ("enum", .array(WebhookDelivery.State.allCases.map { .string($0.rawValue) })),
                            ])
                        ),
                        ("attempts", integer), ("last_status", integer), ("last_error", string), ("last_attempt_at", dateTime),
                        ("next_attempt_at", dateTime), ("delivered_at", dateTime),
                    ], required: ["id", "webhook_id", "event_id", "event", "document_id", "state", "attempts"])
            ),
            (
                "WebhookDeliveryList",
                object(
                    [("deliveries", .object([("type", .string("array")), ("items", ref("WebhookDelivery"))]))], required: ["deliveries"])
            ),
            (
                "SubmissionsPage",
                object(
                    [
                        ("submissions", .object([("type", .string("array")), ("items", ref("SubmissionEvent"))])), ("cursor", string),
                        ("more", .object([("type", .string("boolean"))])),
                    ], required: ["submissions", "cursor", "more"])
            ),
            (
                "ReceivedSupportBundle",
                object(
                    [
                        ("id", integer), ("device_id", string), ("principal", string), ("received_at", dateTime),
                        ("bundle", ref("SupportBundle")),
                    ],
                    required: ["id", "principal", "received_at", "bundle"])
            ),
            (
                "SupportBundleList",
                object(
                    [("bundles", .object([("type", .string("array")), ("items", ref("ReceivedSupportBundle"))]))], required: ["bundles"])
            ),
        ]
    }
}
