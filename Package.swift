// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "FormSync",
    // Mutex (Synchronization) sets the floor: macOS 15, iOS 18. Linux is first-class.
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "FormSpec", targets: ["FormSpec"]),
        .library(name: "FormSyncCodegen", targets: ["FormSyncCodegen"]),
        .library(name: "FormSyncModel", targets: ["FormSyncModel"]),
        .library(name: "FormSyncClient", targets: ["FormSyncClient"]),
        .library(name: "FormSyncProtocol", targets: ["FormSyncProtocol"]),
        .library(name: "FormSyncHTTP", targets: ["FormSyncHTTP"]),
        .library(name: "FormSyncServer", targets: ["FormSyncServer"]),
        .library(name: "FormSyncInterpreter", targets: ["FormSyncInterpreter"]),
        .library(name: "FormSyncOpenAPI", targets: ["FormSyncOpenAPI"]),
        .library(name: "FormSyncAuthoring", targets: ["FormSyncAuthoring"]),
        .executable(name: "formsync", targets: ["formsync"]),
        .executable(name: "formsync-gen", targets: ["formsync-gen"]),
        .library(name: "FormSyncTesting", targets: ["FormSyncTesting"]),
        .plugin(name: "FormSyncPlugin", targets: ["FormSyncPlugin"]),
        .plugin(name: "FormSyncGeneratePlugin", targets: ["FormSyncGeneratePlugin"]),
    ],
    targets: [
        // libyaml: only the YAML reader's differential test links it, as an oracle.
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // The QR code of an enrolment link (`formsync devices --enrol … --qr`, `formsync serve`).
        .systemLibrary(name: "CQRencode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),

        // The one pattern engine: the checker accepts what it compiles; validators match with it.
        .target(name: "FormSyncPattern"),
        .target(name: "FormSpec", dependencies: ["FormSyncPattern"]),
        .target(name: "FormSyncCodegen", dependencies: ["FormSpec"]),
        // SHA-256's compression function, in C for the CPU's SHA extensions.
        .target(name: "CSHA256"),
        // What generated code needs and nothing else: no SQLite, no networking.
        .target(name: "FormSyncModel", dependencies: ["CSHA256", "FormSyncPattern"]),
        // The small SQLite layer the device and the reference server share.
        .target(name: "FormSyncSQLite", dependencies: ["CSQLite"]),
        // The device side: Store/, Outbox/, Engine/, Transport/, Stash/.
        .target(name: "FormSyncClient", dependencies: ["FormSyncModel", "FormSyncProtocol", "FormSyncSQLite"]),
        // The wire, defined once: error codes (and, as they move here, routes and messages).
        .target(name: "FormSyncProtocol"),
        // A small HTTP/1.1 server (parser, limits, workers): of the protocol it knows only the
        // error codes of its own refusals.
        .target(name: "FormSyncHTTP", dependencies: ["FormSyncProtocol"]),
        // The reference server: the protocol's logic and its stores, served through FormSyncHTTP.
        .target(name: "FormSyncServer", dependencies: ["FormSyncHTTP", "FormSyncModel", "FormSyncProtocol", "FormSyncSQLite"]),
        // The server's PostgreSQL store, through libpq: for more than one server node.
        .target(name: "FormSyncPostgres", dependencies: ["CLibPQ", "FormSyncModel", "FormSyncProtocol", "FormSyncServer"]),
        // Runs checked specs without compiling them (serve --specs, a device on a newer spec).
        .target(name: "FormSyncInterpreter", dependencies: ["FormSpec", "FormSyncModel"]),
        // What the command-line tools share: argument parsing, diagnostics output, `generate`.
        .target(name: "FormSyncCommandLine", dependencies: ["FormSpec", "FormSyncCodegen"]),
        // What authors use beside the generator: the live preview and the spec language's schema
        // (kept out of FormSyncCodegen, which every app build compiles into formsync-gen).
        .target(name: "FormSyncAuthoring", dependencies: ["FormSpec", "FormSyncCodegen"]),
        // The protocol as an OpenAPI 3.1 description, from the route table and the form specs.
        .target(name: "FormSyncOpenAPI", dependencies: ["FormSpec", "FormSyncCodegen", "FormSyncProtocol"]),
        // The generator the build plugin runs, and the command plugin's `generate`: nothing else.
        .executableTarget(name: "formsync-gen", dependencies: ["FormSpec", "FormSyncCodegen", "FormSyncCommandLine"]),
        // The next build's forms, which the demo ships mid-day (and the simulation too).
        .target(name: "FieldFormsUpdate", dependencies: ["FieldForms", "FormSpec", "FormSyncInterpreter", "FormSyncModel"]),
        // The tool users run: check, generate, diff, schema, openapi, preview, serve, conformance, outbox, devices, demo.
        .executableTarget(
            name: "formsync",
            dependencies: [
                "FormSpec", "FormSyncCodegen", "FormSyncCommandLine", "FormSyncModel", "FormSyncClient", "FormSyncHTTP", "FormSyncPattern",
                "FormSyncProtocol", "FormSyncSQLite",
                "FieldForms", "FieldFormsUpdate", "FormSyncServer", "FormSyncInterpreter", "FormSyncPostgres", "FormSyncOpenAPI",
                "FormSyncAuthoring", "CQRencode",
            ]
        ),
        // The lab, not a product: benchmarks (`formsync-lab bench`) and the torture harnesses.
        .executableTarget(
            name: "formsync-lab",
            dependencies: [
                "CSQLite", "FieldForms", "FormSpec", "FormSyncCodegen", "FormSyncCommandLine", "FormSyncModel", "FormSyncClient",
                "FormSyncHTTP", "FormSyncProtocol", "FormSyncSQLite", "FormSyncServer", "FormSyncPostgres", "FormSyncTesting",
                "FormSyncTorture",
            ]
        ),
        .plugin(name: "FormSyncPlugin", capability: .buildTool(), dependencies: ["formsync-gen"]),
        // `swift package --allow-writing-to-package-directory generate-formsync`: refreshes the
        // checked-in copy of the generated code (Generated/) and the lock of released shapes.
        .plugin(
            name: "FormSyncGeneratePlugin",
            capability: .command(
                intent: .custom(
                    verb: "generate-formsync", description: "Refresh the checked-in generated code and formspecs.lock from the specs"),
                permissions: [
                    .writeToPackageDirectory(reason: "writes the generated Swift, the JSON Schemas and formspecs.lock beside the specs")
                ]),
            dependencies: ["formsync-gen"]),
        // Test doubles for apps' own tests: a scriptable in-process transport.
        .target(name: "FormSyncTesting", dependencies: ["FormSpec", "FormSyncClient", "FormSyncModel"]),
        // `formsync-lab torture`: the crash harness and the seeded simulation (not a product).
        .target(
            name: "FormSyncTorture",
            dependencies: [
                "FieldForms", "FieldFormsUpdate", "FormSyncModel", "FormSyncClient", "FormSyncHTTP", "FormSyncProtocol", "FormSyncServer",
                "FormSyncSQLite", "FormSyncTesting", "FormSyncPostgres",
            ]),

        // The example forms: every *.yaml in FormSpecs/ is compiled by the plugin.
        .target(
            name: "FieldForms",
            dependencies: ["FormSyncModel"],
            path: "FormSpecs",
            exclude: ["formspec.schema.json", "formspecs.lock"],
            plugins: ["FormSyncPlugin"]
        ),

        // Test support: every field type and rule (the interpreter's differential test), and four
        // versions of one evolving form, each compiled by the plugin as an app build would be.
        .target(name: "CorpusForms", dependencies: ["FormSyncModel"], path: "Tests/CorpusForms", plugins: ["FormSyncPlugin"]),
        .target(name: "EvolutionV1", dependencies: ["FormSyncModel"], path: "Tests/Evolution/V1", plugins: ["FormSyncPlugin"]),
        .target(name: "EvolutionV2", dependencies: ["FormSyncModel"], path: "Tests/Evolution/V2", plugins: ["FormSyncPlugin"]),
        .target(name: "EvolutionV3", dependencies: ["FormSyncModel"], path: "Tests/Evolution/V3", plugins: ["FormSyncPlugin"]),
        .target(name: "EvolutionV4", dependencies: ["FormSyncModel"], path: "Tests/Evolution/V4", plugins: ["FormSyncPlugin"]),
        .testTarget(
            name: "FormSyncInterpreterTests",
            dependencies: [
                "FieldForms", "CorpusForms", "EvolutionV1", "EvolutionV2", "EvolutionV3", "EvolutionV4", "FormSpec", "FormSyncAuthoring",
                "FormSyncCodegen",
                "FormSyncModel",
                "FormSyncInterpreter", "FormSyncClient", "FormSyncServer", "FormSyncTesting", "FormSyncTorture",
            ]),
        // The house rules a tool enforces: platform guards, the package's shape, the docs' length.
        .testTarget(name: "HouseRulesTests", dependencies: ["FormSyncTesting"]),
        .testTarget(
            name: "FormSpecTests", dependencies: ["CYAML", "FormSpec", "FormSyncPattern", "FormSyncTesting"],
            exclude: ["BrokenSpecs", "EvolutionPairs"]),
        .testTarget(name: "FormSyncPatternTests", dependencies: ["FormSyncPattern", "FormSyncTesting"]),
        .testTarget(
            name: "FormSyncCodegenTests",
            dependencies: ["FormSpec", "FormSyncCodegen", "FormSyncModel", "FormSyncTesting"]),
        .testTarget(name: "FormSyncModelTests", dependencies: ["FormSyncModel", "FormSyncTesting", "CSHA256"]),
        .testTarget(name: "FieldFormsTests", dependencies: ["FieldForms", "FormSyncModel", "FormSyncTesting"]),
        .testTarget(
            name: "FormSyncClientTests",
            dependencies: ["FieldForms", "FormSyncModel", "FormSyncClient", "FormSyncProtocol", "FormSyncSQLite", "FormSyncTesting"]),
        .testTarget(name: "FormSyncHTTPTests", dependencies: ["FormSyncHTTP", "FormSyncTesting"]),
        .testTarget(name: "FormSyncProtocolTests", dependencies: ["FormSyncProtocol"]),
        .testTarget(
            name: "FormSyncAuthoringTests",
            dependencies: ["FormSpec", "FormSyncAuthoring", "FormSyncClient", "FormSyncCodegen", "FormSyncModel", "FormSyncTesting"]),
        .testTarget(
            name: "FormSyncOpenAPITests",
            dependencies: ["FormSpec", "FormSyncCodegen", "FormSyncOpenAPI", "FormSyncProtocol", "FormSyncTesting"]),
        .testTarget(name: "FormSyncSQLiteTests", dependencies: ["FormSyncSQLite", "FormSyncTesting"]),
        .testTarget(
            name: "FormSyncServerTests",
            dependencies: [
                "CorpusForms", "FormSyncHTTP", "FormSyncModel", "FormSyncProtocol", "FormSyncServer", "FormSyncSQLite", "FormSyncTesting",
                "FormSyncTorture",
            ]),
        .testTarget(name: "FormSyncPostgresTests", dependencies: ["FormSyncPostgres", "FormSyncTesting", "FormSyncTorture"]),
        .testTarget(name: "FormSyncTestingTests", dependencies: ["FormSyncTesting"]),
        .testTarget(name: "FormSyncCommandLineTests", dependencies: ["FormSyncCommandLine"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "FieldForms", "CorpusForms", "FormSpec", "FormSyncModel", "FormSyncClient", "FormSyncHTTP", "FormSyncProtocol",
                "FormSyncServer",
                "FormSyncSQLite", "FormSyncAuthoring", "FormSyncCodegen", "FormSyncInterpreter",
                "FormSyncTesting",
                "FormSyncTorture", "FormSyncPostgres",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
