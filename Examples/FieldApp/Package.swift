// swift-tools-version: 6.0
// An app package that uses FormSync by path, as a field team's app would: its own specs,
// compiled by the FormSync plugin; the outbox, the engine and HTTP from FormSyncClient.
import PackageDescription

let package = Package(
    name: "FieldApp",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(name: "FormSync", path: "../..")],
    targets: [
        // Every *.yaml in Specs/ becomes generated Swift on the next build.
        .target(
            name: "FieldAppForms",
            dependencies: [.product(name: "FormSyncModel", package: "FormSync")],
            path: "Specs",
            exclude: ["formspec.schema.json"],
            plugins: [.plugin(name: "FormSyncPlugin", package: "FormSync")]),
        .executableTarget(
            name: "FieldApp",
            dependencies: [
                "FieldAppForms", .product(name: "FormSyncClient", package: "FormSync"),
                .product(name: "FormSyncProtocol", package: "FormSync"),
            ]),
        .testTarget(
            name: "FieldAppTests",
            dependencies: [
                "FieldAppForms", .product(name: "FormSyncClient", package: "FormSync"),
                .product(name: "FormSyncTesting", package: "FormSync"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
