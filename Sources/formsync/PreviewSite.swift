import FormSpec
import FormSyncAuthoring
import FormSyncCodegen
import FormSyncHTTP
import Foundation
import Synchronization

/// What `formsync preview` serves: the specs of its folders, checked again whenever a spec file
/// changes (each request compares the files' sizes and modification times), as pages.
final class PreviewSite: Sendable {
    struct Snapshot: Sendable {
        var fingerprint: String
        var forms: [FormDefinition]
        var diagnostics: [Diagnostic]
        /// Each form's own spec's diagnostics, by form name.
        var diagnosticsOfForm: [String: [Diagnostic]] = [:]
    }

    let paths: [String]
    private let current = Mutex<Snapshot?>(nil)

    init(paths: [String]) {
        self.paths = paths
    }

    /// The files' names, sizes and modification times: what changes when an editor saves.
    func fingerprint() -> String {
        var parts: [String] = []
        for file in SpecLoader.specFiles(in: paths) {
            var info = stat()
            guard stat(file, &info) == 0 else { continue }
            #if canImport(Darwin)
                let modified = Int64(info.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(info.st_mtimespec.tv_nsec)
            #elseif canImport(Glibc) || canImport(Musl)
                let modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            #endif
            parts.append("\(file):\(info.st_size):\(modified)")
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in parts.joined(separator: "\n").utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }

    /// The specs as they are on disk now, checked again only when they changed.
    func snapshot() -> Snapshot {
        let fingerprint = fingerprint()
        if let snapshot = current.withLock({ $0 }), snapshot.fingerprint == fingerprint { return snapshot }
        let checked = SpecLoader.check(filesAt: SpecLoader.specFiles(in: paths))
        let diagnostics = checked.flatMap(\.spec.diagnostics)
        var snapshot = Snapshot(
            fingerprint: fingerprint, forms: checked.compactMap(\.spec.form).sorted { $0.name < $1.name }, diagnostics: diagnostics)
        for file in checked { if let form = file.spec.form { snapshot.diagnosticsOfForm[form.name] = file.spec.diagnostics } }
        current.withLock { $0 = snapshot }
        return snapshot
    }

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            return HTTPResponse(status: 405, headers: [("Allow", "GET, HEAD")])
        }
        let snapshot = snapshot()
        func page(_ html: String) -> HTTPResponse { Self.reply(html, type: "text/html; charset=utf-8") }
        switch request.path {
        case "/":
            return page(PreviewPage.index(forms: snapshot.forms, diagnostics: snapshot.diagnostics, version: snapshot.fingerprint))
        case "/version":
            return Self.reply(snapshot.fingerprint, type: "text/plain; charset=utf-8")
        case "/formsync.js":
            return Self.reply(PreviewRuntime.script, type: "text/javascript; charset=utf-8")
        default:
            guard request.path.hasPrefix("/forms/") else { break }
            var name = String(request.path.dropFirst("/forms/".count))
            let script = name.hasSuffix(".js")
            if script { name.removeLast(3) }
            guard let form = snapshot.forms.first(where: { $0.name == name }) else {
                // A form whose spec no longer checks (or any page while one does not): the page
                // shows the errors.
                if !script && snapshot.diagnostics.hasErrors {
                    return page(PreviewPage.errors(snapshot.diagnostics, version: snapshot.fingerprint))
                }
                break
            }
            if script { return Self.reply(PreviewScriptGenerator.script(for: form), type: "text/javascript; charset=utf-8") }
            return page(PreviewPage.form(form, diagnostics: snapshot.diagnosticsOfForm[form.name] ?? [], version: snapshot.fingerprint))
        }
        return Self.reply("not found", type: "text/plain; charset=utf-8", status: 404)
    }

    static func reply(_ text: String, type: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", type), ("Cache-Control", "no-store")], body: Data(text.utf8))
    }
}
