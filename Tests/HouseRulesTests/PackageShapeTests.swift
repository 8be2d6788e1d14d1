import FormSyncTesting
import Foundation
import Testing

/// The package's shape, read from the manifest as SwiftPM reads it (`swift package
/// dump-package`): what each product carries, what the plugins build, and that every target
/// imports only what it declares.
struct PackageShapeTests {
    struct Target: Decodable, Sendable {
        var name: String
        var type: String
        var path: String?
        var dependencies: [[String: [String?]]]

        var dependencyNames: [String] { dependencies.compactMap { $0.values.first?.first ?? nil } }
    }

    struct Product: Decodable, Sendable {
        var name: String
        var targets: [String]
    }

    struct Manifest: Decodable, Sendable {
        var targets: [Target]
        var products: [Product]
    }

    static let root = PlatformGuardTests.root

    /// The manifest, dumped once for all the tests here.
    static let dumped = Result { try dump() }

    static func manifest() throws -> Manifest { try dumped.get() }

    /// Dumps the manifest with a scratch folder of its own (the test run holds the package's).
    static func dump() throws -> Manifest {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("dump-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "package", "dump-package", "--package-path", root.path, "--scratch-path", scratch.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw DumpFailure() }
        return try JSONDecoder().decode(Manifest.self, from: data)
    }

    struct DumpFailure: Error, CustomStringConvertible {
        var description: String { "swift package dump-package failed: is swift on the PATH?" }
    }

    static func closure(of names: [String], in manifest: Manifest) -> Set<String> {
        let byName = Dictionary(uniqueKeysWithValues: manifest.targets.map { ($0.name, $0) })
        var seen: Set<String> = []
        var stack = names
        while let name = stack.popLast() {
            guard seen.insert(name).inserted, let target = byName[name] else { continue }
            stack += target.dependencyNames
        }
        return seen
    }

    static let labOnly: Set<String> = ["FormSyncTesting", "FormSyncTorture", "CYAML", "formsync-lab"]

    @Test func noProductCarriesTheTestDoublesTheHarnessesOrLibyaml() async throws {
        try await OffThePool.run {
            let manifest = try Self.manifest()
            #expect(manifest.products.count >= 8)
            for product in manifest.products where product.name != "FormSyncTesting" {
                let carried = Self.closure(of: product.targets, in: manifest).intersection(Self.labOnly)
                #expect(carried.isEmpty, "product \(product.name) carries \(carried.sorted())")
            }
            #expect(!manifest.products.contains { $0.name == "formsync-lab" })
        }
    }

    @Test func thePluginsBuildTheSmallGeneratorAndNothingThatNeedsACLibrary() async throws {
        try await OffThePool.run {
            let manifest = try Self.manifest()
            for plugin in manifest.targets where plugin.type == "plugin" {
                let built = Self.closure(of: plugin.dependencyNames, in: manifest)
                #expect(built.contains("formsync-gen"), "\(plugin.name)")
                let heavy = built.intersection(Self.labOnly.union(["CSQLite", "CLibPQ", "formsync", "FormSyncClient", "FormSyncServer"]))
                #expect(heavy.isEmpty, "plugin \(plugin.name) builds \(heavy.sorted())")
            }
        }
    }

    /// The modules of the toolchain and the system, which need no declaration.
    static let system: Set<String> = [
        "Foundation", "FoundationNetworking", "FoundationEssentials", "Dispatch", "Synchronization", "Glibc", "Musl", "Darwin", "Testing",
        "XCTest", "PackagePlugin", "CoreFoundation", "os",
    ]

    static func imports(in text: String) -> Set<String> {
        let pattern = try! NSRegularExpression(
            pattern:
                #"^\s*(?:@\w+\s+)*(?:public |package |internal )?import\s+(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?([A-Za-z_][A-Za-z0-9_]*)"#,
            options: .anchorsMatchLines)
        let range = NSRange(text.startIndex..., in: text)
        return Set(pattern.matches(in: text, range: range).compactMap { Range($0.range(at: 1), in: text).map { String(text[$0]) } })
    }

    @Test func everyTargetImportsOnlyTheTargetsItDeclares() async throws {
        try await OffThePool.run {
            let manifest = try Self.manifest()
            let targetNames = Set(manifest.targets.map(\.name))
            var problems: [String] = []
            var checked = 0
            for target in manifest.targets where target.type != "system" && target.type != "plugin" {
                let folder = target.path ?? (target.type == "test" ? "Tests/\(target.name)" : "Sources/\(target.name)")
                let url = Self.root.appendingPathComponent(folder)
                guard let walker = FileManager.default.enumerator(atPath: url.path) else { continue }
                let declared = Set(target.dependencyNames)
                for case let file as String in walker where file.hasSuffix(".swift") {
                    let text = try String(contentsOf: url.appendingPathComponent(file), encoding: .utf8)
                    checked += 1
                    for module in Self.imports(in: text) where module != target.name && !Self.system.contains(module) {
                        if !declared.contains(module) {
                            let kind = targetNames.contains(module) ? "a target of this package" : "a module"
                            problems.append("\(folder)/\(file) imports \(module) (\(kind)) which \(target.name) does not declare")
                        }
                    }
                }
            }
            #expect(checked > 300)
            #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        }
    }

    @Test func everyModuleHasATestTargetNamedAfterIt() async throws {
        try await OffThePool.run {
            let manifest = try Self.manifest()
            let tests = Set(manifest.targets.filter { $0.type == "test" }.map(\.name))
            let modules = [
                "FormSpec", "FormSyncCodegen", "FormSyncModel", "FormSyncClient", "FormSyncHTTP", "FormSyncServer", "FormSyncPostgres",
                "FormSyncSQLite",
                "FormSyncInterpreter", "FormSyncPattern", "FormSyncTesting", "FormSyncCommandLine", "FieldForms",
            ]
            for module in modules {
                #expect(manifest.targets.contains { $0.name == module })
                #expect(tests.contains(module + "Tests"), "no \(module)Tests")
            }
        }
    }

    @Test func theImportScannerFindsEachKindOfImport() {
        let found = Self.imports(
            in: "import A\n@testable import B\n@preconcurrency import C\nimport struct D.Thing\n  import E // x\nlet importF = 1\n")
        #expect(found == ["A", "B", "C", "D", "E"])
    }
}
