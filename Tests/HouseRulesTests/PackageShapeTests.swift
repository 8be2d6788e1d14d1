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
                // Issue 44: the preview and the spec language's schema (FormSyncAuthoring) and the
                // OpenAPI writer are the tool's, not what every app build compiles.
                let heavy = built.intersection(
                    Self.labOnly.union([
                        "CSQLite", "CLibPQ", "formsync", "FormSyncClient", "FormSyncServer", "FormSyncAuthoring", "FormSyncOpenAPI",
                    ]))
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
                #"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:public |package |internal )?import\s+(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?([A-Za-z_][A-Za-z0-9_]*)"#,
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

    /// Issue 44: the store protocol knew HTTP (the ledger stored an `HTTPResponse`), so every
    /// store imported the HTTP server. The stores and what they exchange import no HTTP module.
    @Test func theServerStoresKnowNothingOfHTTP() throws {
        let folder = Self.root.appendingPathComponent("Sources/FormSyncServer")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
            ($0.hasPrefix("ServerStore") || $0.hasPrefix("SQLite") || $0.hasPrefix("CredentialStore")
                || ["RecordedReply", "WriteBatches", "FileBlobs", "DurableFiles"].contains($0.dropLast(6)))
                && $0.hasSuffix(".swift")
        }
        #expect(files.count >= 13, "\(files)")
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            #expect(Self.imports(in: text).isDisjoint(with: ["FormSyncHTTP", "FoundationNetworking"]), "\(file) imports HTTP")
            #expect(!text.contains("HTTPResponse") && !text.contains("HTTPRequest"), "\(file) names an HTTP type")
        }
    }

    /// Issue 46: every version of a document or a record keeps its author. The store's writes
    /// of documents and records are called from `VersionWriter` alone, which keeps the version
    /// with them; a write made anywhere else would leave a version with no author.
    @Test func onlyTheVersionWriterWritesDocumentsAndRecords() throws {
        let folder = Self.root.appendingPathComponent("Sources/FormSyncServer")
        let writes = ["store.createDocument(", "store.updateDocument(", "store.putRecord(", "store.deleteRecord("]
        var callers: [String: Int] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for write in writes { callers[file, default: 0] += text.components(separatedBy: write).count - 1 }
        }
        #expect(callers["VersionWriter.swift"] == 4, "\(callers)")
        #expect(callers.filter { $0.key != "VersionWriter.swift" && $0.value > 0 }.isEmpty, "\(callers)")
    }

    /// Issue 44: `SyncServer` was one class worn as five files (2,075 lines) and
    /// `SQLiteServerStore` another (972). Each type of the server module, with its `Type+Part`
    /// extension files, stays within about 600 lines.
    @Test func noTypeOfTheServerModuleIsOverAboutSixHundredLines() throws {
        let folder = Self.root.appendingPathComponent("Sources/FormSyncServer")
        var lines: [String: Int] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let type = String(file.dropLast(6).split(separator: "+").first ?? "")
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            lines[type, default: 0] += text.split(separator: "\n", omittingEmptySubsequences: false).count
        }
        #expect((lines["SyncServer"] ?? 0) > 200, "the server's own type is found: \(lines)")
        let large = lines.filter { $0.value > 600 }
        #expect(large.isEmpty, "over 600 lines: \(large)")
    }

    /// Issue 44: four declared dependencies were never imported (`FormSyncClient → CSQLite`
    /// among them). Every target a target declares is imported by one of its files.
    @Test func everyDeclaredTargetDependencyIsImported() async throws {
        try await OffThePool.run {
            let manifest = try Self.manifest()
            let targetNames = Set(manifest.targets.map(\.name))
            var problems: [String] = []
            for target in manifest.targets where target.type != "system" && target.type != "plugin" {
                let folder = target.path ?? (target.type == "test" ? "Tests/\(target.name)" : "Sources/\(target.name)")
                let url = Self.root.appendingPathComponent(folder)
                guard let walker = FileManager.default.enumerator(atPath: url.path) else { continue }
                var imported: Set<String> = []
                for case let file as String in walker {
                    if file.hasSuffix(".swift") {
                        imported.formUnion(Self.imports(in: try String(contentsOf: url.appendingPathComponent(file), encoding: .utf8)))
                    } else if file.hasSuffix(".yaml") {
                        imported.insert("FormSyncModel")  // the plugin's code for these specs imports it
                    }
                }
                for dependency in target.dependencyNames where targetNames.contains(dependency) && !imported.contains(dependency) {
                    let kind = manifest.targets.first { $0.name == dependency }?.type ?? ""
                    if kind == "executable" { continue }  // a tool a plugin of the target runs
                    problems.append("\(target.name) declares \(dependency) and never imports it")
                }
            }
            #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        }
    }

    /// docs/Layout.md is the map a reader finds the code by: every module of `Sources/` has a
    /// row, and every file or type a row names exists (issue 44: it left out `FormSyncPostgres`
    /// and `Fuzz/`, and named files that did not exist).
    @Test func theLayoutHasARowForEveryModuleAndNamesOnlyWhatExists() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/Layout.md"), encoding: .utf8)
        let modules = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Sources").path)
        let rows = text.split(separator: "\n").filter { $0.hasPrefix("| `") }
        for module in modules {
            #expect(rows.contains { $0.contains("`Sources/\(module)`") }, "docs/Layout.md has no row for Sources/\(module)")
        }
        #expect(rows.contains { $0.hasPrefix("| `Fuzz/`") })
        // Every Swift file of Sources, and every type declared there.
        var files: Set<String> = []
        var types: Set<String> = []
        let declaration = try NSRegularExpression(pattern: #"(?:struct|class|enum|actor|protocol|typealias)\s+([A-Z][A-Za-z0-9]*)"#)
        let sources = Self.root.appendingPathComponent("Sources")
        for case let file as String in FileManager.default.enumerator(atPath: sources.path)! where file.hasSuffix(".swift") {
            files.insert(String((file as NSString).lastPathComponent.dropLast(6)))
            let code = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for match in declaration.matches(in: code, range: NSRange(code.startIndex..., in: code)) {
                if let range = Range(match.range(at: 1), in: code) { types.insert(String(code[range])) }
            }
        }
        let named = try NSRegularExpression(pattern: #"`([A-Z][A-Za-z0-9]*(?:\+[A-Za-z]+)?|\+[A-Za-z]+)`"#)
        var unknown: [String] = []
        for row in rows where row.hasPrefix("| `Sources/") {
            let line = String(row)
            for match in named.matches(in: line, range: NSRange(line.startIndex..., in: line)) {
                guard let range = Range(match.range(at: 1), in: line) else { continue }
                let name = String(line[range])
                let known =
                    name.hasPrefix("+")
                    ? files.contains { $0.hasSuffix(name) } : files.contains(name) || types.contains(name) || modules.contains(name)
                if !known { unknown.append(name) }
            }
        }
        #expect(unknown.isEmpty, "docs/Layout.md names what Sources does not hold: \(unknown)")
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
            in: "import A\n@testable import B\n@preconcurrency import C\nimport struct D.Thing\n  import E // x\nlet importF = 1\n"
                + "@_spi(Generated) import G\n@_spi(Generated) @testable import H\n")
        #expect(found == ["A", "B", "C", "D", "E", "G", "H"])
    }
}
