// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "FormSync",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "FormSpec", targets: ["FormSpec"]),
        .library(name: "FormSyncCodegen", targets: ["FormSyncCodegen"]),
        .library(name: "FormSyncRuntime", targets: ["FormSyncRuntime"]),
        .library(name: "FormSyncServer", targets: ["FormSyncServer"]),
        .executable(name: "formsync", targets: ["formsync"]),
        .executable(name: "formsync-gen", targets: ["formsync-gen"]),
        .plugin(name: "FormSyncPlugin", targets: ["FormSyncPlugin"]),
    ],
    targets: [
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        .target(name: "FormSpec", dependencies: ["CYAML"]),
        .target(name: "FormSyncCodegen", dependencies: ["FormSpec"]),
        .target(name: "FormSyncRuntime", dependencies: ["CSQLite"]),
        .target(name: "FormSyncServer", dependencies: ["FormSyncRuntime"]),
        .executableTarget(name: "formsync-gen", dependencies: ["FormSpec", "FormSyncCodegen"]),
        .executableTarget(
            name: "formsync",
            dependencies: ["FormSpec", "FormSyncCodegen", "FormSyncRuntime", "FieldForms", "FormSyncTesting", "FormSyncServer", "CSQLite"]
        ),
        .plugin(name: "FormSyncPlugin", capability: .buildTool(), dependencies: ["formsync-gen"]),
        // Test support: a scriptable in-process transport. Not a product.
        .target(name: "FormSyncTesting", dependencies: ["FormSyncRuntime"]),

        // The example forms: every *.yaml in FormSpecs/ is compiled by the plugin.
        .target(
            name: "FieldForms",
            dependencies: ["FormSyncRuntime"],
            path: "FormSpecs",
            exclude: ["formspec.schema.json"],
            plugins: ["FormSyncPlugin"]
        ),

        .testTarget(name: "FormSpecTests", dependencies: ["FormSpec"], exclude: ["BrokenSpecs"]),
        .testTarget(name: "FormSyncCodegenTests", dependencies: ["FormSpec", "FormSyncCodegen"]),
        .testTarget(name: "FormSyncRuntimeTests", dependencies: ["FormSyncRuntime"]),
        .testTarget(name: "FieldFormsTests", dependencies: ["FieldForms", "FormSyncRuntime"]),
        .testTarget(name: "OutboxTests", dependencies: ["FieldForms", "FormSyncRuntime", "FormSyncTesting"]),
        .testTarget(name: "EndToEndTests", dependencies: ["FieldForms", "FormSyncRuntime", "FormSyncServer"]),
    ],
    swiftLanguageModes: [.v6]
)
