import CorpusForms
import FieldForms
import FormSpec
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `formsync preview` in a real browser: Chromium, headless, loads each form's page from the
/// preview server, fills it through its widgets with hundreds of seeded random payloads, and the
/// page's verdicts — the settled payload, the errors with their pointers, each field's relevance
/// — must be the generated Swift code's.
struct PreviewBrowserTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let chromium = "/usr/bin/chromium"
    static let clock = FormClock.fixed(today: LocalDate("2026-06-01")!, now: Timestamp("2026-11-30T09:00:00+01:00")!)
    static let generated = FormRegistry(FieldForms.FormCatalog.forms + CorpusForms.FormCatalog.forms)

    /// What the test needs of a generated type: its own equality and its `isRelevant`.
    struct Typed: Sendable {
        let equal: @Sendable (Data, Data) -> Bool
        let relevance: @Sendable (Data, [String]) -> [String: Bool]?
    }

    static func typed<P: FormPayload, F: FormField>(_ type: P.Type, _ isRelevant: @escaping @Sendable (P, F) -> Bool) -> Typed {
        let decode: @Sendable (Data) -> P? = { json in try? JSONDecoder().decode(P.self, from: json) }
        return Typed(
            equal: { a, b in
                guard let x = decode(a), let y = decode(b) else { return false }
                return x == y
            },
            relevance: { json, pointers in
                guard let payload = decode(json) else { return nil }
                var map: [String: Bool] = [:]
                for pointer in pointers {
                    guard let field = F(pointer: pointer) else { return nil }
                    map[pointer] = isRelevant(payload, field)
                }
                return map
            })
    }

    static let forms: [String: Typed] = [
        "CustomerUpdate": typed(CustomerUpdate.self) { $0.isRelevant($1) },
        "DeliveryConfirmation": typed(DeliveryConfirmation.self) { $0.isRelevant($1) },
        "DeliveryUpdate": typed(DeliveryUpdate.self) { $0.isRelevant($1) },
        "FindingRemoval": typed(FindingRemoval.self) { $0.isRelevant($1) },
        "FindingUpdate": typed(FindingUpdate.self) { $0.isRelevant($1) },
        "JobUpdate": typed(JobUpdate.self) { $0.isRelevant($1) },
        "NewCustomer": typed(NewCustomer.self) { $0.isRelevant($1) },
        "SalesOrder": typed(SalesOrder.self) { $0.isRelevant($1) },
        "SiteInspection": typed(SiteInspection.self) { $0.isRelevant($1) },
        "Kitchen": typed(Kitchen.self) { $0.isRelevant($1) },
        "NewPlate": typed(NewPlate.self) { $0.isRelevant($1) },
        "Survey": typed(Survey.self) { $0.isRelevant($1) },
        "Tasting": typed(Tasting.self) { $0.isRelevant($1) },
    ]

    static func definitions() -> [FormDefinition] {
        let files = SpecLoader.specFiles(in: [
            root.appendingPathComponent("FormSpecs").path, root.appendingPathComponent("Tests/CorpusForms").path,
        ])
        return SpecLoader.check(filesAt: files).compactMap(\.spec.form)
    }

    /// A running `formsync preview` of FormSpecs and the test corpus, and its address.
    final class Preview: Sendable {
        let process: ChildProcess
        let base: String

        init(_ specs: [String] = ["FormSpecs", "Tests/CorpusForms"]) async throws {
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("preview-\(UUID().uuidString).log").path
            process = try ChildProcess(
                DemoProcessTests.formsync.path, ["preview"] + specs + ["--port", "0"], directory: root.path,
                standardOutput: .file(log), standardError: .file(log))
            func address() -> String? {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                return text.range(of: #"http://127\.0\.0\.1:[0-9]+/"#, options: .regularExpression).map { String(text[$0]) }
            }
            // The address line is the event waited for. The bound only ends a hang, and the log
            // is read once more after it: on a busy machine this task may not run again until
            // long after the line was written.
            let deadline = Date().addingTimeInterval(30)
            var found = address()
            while found == nil, Date() < deadline, process.isRunning {
                try await Task.sleep(for: .milliseconds(50))
                found = address()
            }
            found = found ?? address()
            guard let found else {
                process.signal(SIGKILL)
                throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "formsync preview did not start: \(log)"])
            }
            base = found
        }

        func stop() {
            process.signal(SIGKILL)
            _ = process.waitUntilExit()
        }
    }

    static func fetch(_ url: String) async throws -> String {
        let (data, _) = try await URLSession.shared.data(from: URL(string: url)!)
        return String(decoding: data, as: UTF8.self)
    }

    /// The form's page as served, with a driver that loads each payload into its widgets and
    /// records the page's verdict; Chromium runs it and the verdicts come back in the DOM.
    static func verdicts(_ form: String, _ payloads: [String], preview: Preview) async throws -> [[String: Any]] {
        let cases = Data(try JSONSerialization.data(withJSONObject: payloads)).base64EncodedString()
        let script = """
            FS.clock.today = "2026-06-01"; FS.clock.now = "2026-11-30T09:00:00+01:00";
            const cases = JSON.parse(decodeURIComponent(escape(atob("\(cases)"))));
            const out = cases.map((text) => { FS.load(JSON.parse(text)); return FS.verdict(); });
            """
        guard let list = try await run(form, script, preview: preview) as? [[String: Any]] else { return [] }
        return list
    }

    /// Runs `script`, which leaves its result in `out`, on the form's page as served, in
    /// Chromium; the result, as JSON, or nil (recorded) when the page gave none.
    static func run(_ form: String, _ script: String, preview: Preview) async throws -> Any? {
        var page = try await fetch(preview.base + "forms/" + form)
        let driver = """
            <script>
            \(script)
            const pre = document.createElement("pre"); pre.id = "verdicts";
            pre.textContent = btoa(unescape(encodeURIComponent(JSON.stringify(out))));
            document.body.append(pre);
            </script>
            """
        page = page.replacingOccurrences(of: "<head>", with: "<head><base href=\"\(preview.base)\">")
        page = page.replacingOccurrences(of: "</body>", with: driver + "</body>")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("preview-\(form)-\(UUID().uuidString).html")
        try page.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await ProcessRunner.run(
            URL(fileURLWithPath: chromium), ["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", file.absoluteString])
        guard let start = run.output.range(of: "<pre id=\"verdicts\">"),
            let end = run.output.range(of: "</pre>", range: start.upperBound..<run.output.endIndex),
            let decoded = Data(base64Encoded: String(run.output[start.upperBound..<end.lowerBound])),
            let result = try? JSONSerialization.jsonObject(with: decoded, options: [.fragmentsAllowed])
        else {
            Issue.record("no result from Chromium for \(form): status \(run.status), \(run.errors.suffix(2000))")
            return nil
        }
        return result
    }

    /// Issue 44: the preview asked for money in minor units. An amount is shown and typed in
    /// major units of its currency (ISO 4217's digits), a currency the table does not know in
    /// minor units, and what was loaded reads back unchanged.
    @Test func moneyIsShownAndTypedInMajorUnitsOfItsCurrency() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.chromium), "install Chromium: apt-get install chromium")
        let preview = try await Preview()
        defer { preview.stop() }
        let script = """
            const boxes = () => document.querySelectorAll('[data-field="deposit"]');
            const shown = [[1250n, "EUR"], [1200n, "JPY"], [1250n, "KWD"], [-5n, "EUR"], [77n, "XYZ"], [7n, "BHD"]].map(([units, currency]) => {
              FS.load({ deposit: { minor_units: units, currency } });
              const [amount] = boxes();
              return amount.value + " " + String(FS.state().deposit.minor_units);
            });
            const typed = [["12.5", "EUR"], ["1200", "JPY"], ["0.125", "KWD"], ["-3.07", "USD"], ["12.345", "EUR"], ["42", "ABC"]].map(([text, currency]) => {
              FS.load({});
              const [amount, code] = boxes();
              amount.value = text; code.value = currency;
              return String(FS.state().deposit.minor_units);
            });
            const out = { shown, typed };
            """
        let result = try #require(try await Self.run("Survey", script, preview: preview) as? [String: [String]])
        #expect(result["shown"] == ["12.50 1250", "1200 1200", "1.250 1250", "-0.05 -5", "77 77", "0.007 7"])
        #expect(result["typed"] == ["1250", "1200", "125", "-307", "12.345", "42"])
    }

    @Test func chromiumIsInstalled() {
        #expect(
            FileManager.default.isExecutableFile(atPath: Self.chromium),
            "the browser tests need Chromium: apt-get install chromium (.ci/run installs it)")
    }

    @Test func thePreviewPageGivesTheGeneratedCodesVerdictsOnRandomPayloads() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.chromium), "install Chromium: apt-get install chromium")
        let preview = try await Preview()
        defer { preview.stop() }
        let definitions = Self.definitions()
        #expect(Set(definitions.map(\.name)) == Set(Self.forms.keys))
        var compared = 0
        var outcomes: [String: Int] = [:]
        for form in definitions.sorted(by: { $0.name < $1.name }) {
            let typed = try #require(Self.forms[form.name])
            let entry = try #require(Self.generated[form.name])
            var random = RandomPayloads(seed: UInt64(form.name.utf8.reduce(5) { $0 &* 31 &+ UInt64($1) }))
            random.wellTyped = true
            let payloads = (0..<(form.name == "Survey" ? 400 : 150)).map { _ in random.payload(form.fields) }
            let verdicts = try await Self.verdicts(form.name, payloads, preview: preview)
            #expect(verdicts.count == payloads.count, "\(form.name)")
            for (payload, verdict) in zip(payloads, verdicts) {
                let (settled, errors) = try FormClock.$current.withValue(Self.clock) {
                    let settled = try entry.recalculate(Data(payload.utf8))
                    return (settled, entry.validate(settled))
                }
                let pageErrors = (verdict["errors"] as? [[String: Any]]) ?? []
                let context = "\(form.name): \(payload)"
                #expect(
                    pageErrors.map { "\($0["pointer"] ?? "") \($0["code"] ?? "")" } == errors.map { "\($0.pointer) \($0.code)" },
                    "\(context)")
                #expect(
                    pageErrors.filter { $0["code"] as? String == "constraint" }.map { $0["detail"] as? String ?? "" }
                        == errors.filter { $0.code == "constraint" }.map(\.detail), "\(context)")
                for error in errors { outcomes[error.code, default: 0] += 1 }
                let pagePayload = Data(((verdict["payload"] as? String) ?? "").utf8)
                #expect(typed.equal(pagePayload, settled), "settled: page \(String(decoding: pagePayload, as: UTF8.self)) \(context)")
                let pageRelevance = (verdict["relevance"] as? [String: Bool]) ?? [:]
                #expect(typed.relevance(settled, Array(pageRelevance.keys)) == pageRelevance, "relevance: \(context)")
                outcomes["hidden", default: 0] += pageRelevance.values.filter { !$0 }.count
                compared += 1
            }
        }
        #expect(compared >= 1500)
        // The payloads reach what the expressions decide, not only the plain rules.
        for outcome in ["constraint", "not_offered", "required", "hidden"] {
            #expect(outcomes[outcome, default: 0] >= 10, "\(outcome): \(outcomes)")
        }
    }

    @Test func aSavedSpecReloadsThePageAndASpecThatDoesNotCheckShowsItsErrorsInstead() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("preview-specs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let spec = folder.appendingPathComponent("Visit.yaml")
        let good = """
            form: Visit
            version: 1
            endpoint: /visits
            fields:
              arrival: time
              departure: { type: time, constraint: departure > arrival }
            """
        try good.write(to: spec, atomically: true, encoding: .utf8)
        let preview = try await Preview([folder.path])
        defer { preview.stop() }
        let first = try await Self.fetch(preview.base + "version")
        let page = try await Self.fetch(preview.base + "forms/Visit")
        #expect(page.contains("<section id=\"form\">"))
        // The page polls /version and reloads when it changes.
        #expect(page.contains("fetch(\"/version\")") && page.contains(first))
        try good.replacingOccurrences(of: "departure > arrival", with: "departure > arival").write(
            to: spec, atomically: true, encoding: .utf8)
        let second = try await Self.fetch(preview.base + "version")
        #expect(second != first)
        let broken = try await Self.fetch(preview.base + "forms/Visit")
        #expect(!broken.contains("<section id=\"form\">"))
        #expect(broken.contains("Visit.yaml:6:52: error: no field &#39;arival&#39; here (did you mean &#39;arrival&#39;?)"), "\(broken)")
        #expect(try await Self.fetch(preview.base).contains("Visit.yaml:6:52: error:"))
        // Another spec beside the broken one is still previewed, and listed above the errors.
        let other = folder.appendingPathComponent("Meter.yaml")
        try "form: Meter\nversion: 1\nendpoint: /meters\nfields:\n  reading: integer\n".write(to: other, atomically: true, encoding: .utf8)
        let index = try await Self.fetch(preview.base)
        #expect(index.contains("<a href=\"/forms/Meter\">Meter</a>") && index.contains("Visit.yaml:6:52: error:"), "\(index)")
        #expect(!index.contains("<a href=\"/forms/Visit\">"))
        #expect(try await Self.fetch(preview.base + "forms/Meter").contains("<section id=\"form\">"))
        try FileManager.default.removeItem(at: other)
        try good.write(to: spec, atomically: true, encoding: .utf8)
        #expect(try await Self.fetch(preview.base + "forms/Visit").contains("<section id=\"form\">"))
        #expect(try await Self.fetch(preview.base + "forms/Visit.js").contains("FS.define("))
        // It serves generated pages and nothing else: not a spec file, not a path it was not given.
        for path in ["forms/Visit.yaml", "forms/..%2FVisit.yaml", "Visit.yaml", "forms/Nope.js"] {
            let (_, response) = try await URLSession.shared.data(from: URL(string: preview.base + path)!)
            #expect((response as? HTTPURLResponse)?.statusCode == 404, "\(path)")
        }
        let absurd = try await ProcessRunner.run(DemoProcessTests.formsync, ["preview", folder.path, "--port", "99999"])
        #expect(absurd.status == 2 && absurd.errors.contains("--port must be between 0 and 65535"), "\(absurd.errors)")
    }

    @Test func chromiumTakesAScreenshotOfEachExampleForm() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.chromium), "install Chromium: apt-get install chromium")
        let preview = try await Preview(["FormSpecs"])
        defer { preview.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("preview-shots-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for form in ["SiteInspection", "SalesOrder", "NewCustomer"] {
            let file = folder.appendingPathComponent("\(form).png")
            let run = try await ProcessRunner.run(
                URL(fileURLWithPath: Self.chromium),
                [
                    "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,1200",
                    "--screenshot=\(file.path)", preview.base + "forms/" + form,
                ])
            let png = try Data(contentsOf: file)
            #expect(run.status == 0 && png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 20_000, "\(form): \(png.count) bytes")
        }
        // Each field's description is on the page beside it, not only in a tooltip.
        let dom = try await ProcessRunner.run(
            URL(fileURLWithPath: Self.chromium),
            ["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", preview.base + "forms/SiteInspection"])
        #expect(dom.output.contains("<span class=\"note\">The site's code, such as LIS-0042.</span>"), "\(dom.output.suffix(3000))")
    }
}
