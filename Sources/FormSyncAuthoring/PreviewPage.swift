import FormSpec
import FormSyncCodegen

/// The HTML of `formsync preview`: an index of the forms, a page per form (its widgets, drawn by
/// the library from the form's generated script, beside the payload and its errors), and the
/// page shown instead while a spec does not check. Every page reloads itself when the specs
/// change (it polls `/version`).
public enum PreviewPage {
    /// The index: one link per form whose spec checks, and the errors of those that do not (a
    /// broken spec does not hide the others).
    public static func index(forms: [FormDefinition], diagnostics: [Diagnostic], version: String) -> String {
        let links = forms.map { form in
            "<li><a href=\"/forms/\(escape(form.name))\">\(escape(form.name))</a> <small>version \(form.version) · \(escape(form.summary ?? form.endpoint))</small></li>"
        }
        let failing = diagnostics.filter { $0.severity == .error }
        let problems =
            failing.isEmpty
            ? ""
            : "<h2>Specs that do not check</h2><p>Fix these and save: the page reloads.</p><ol class=\"diagnostics\">"
                + failing.map { "<li class=\"error\"><code>\(escape($0.description))</code></li>" }.joined() + "</ol>"
        return document(
            title: "FormSync preview", version: version,
            body: "<h1>Forms</h1><ul class=\"forms\">\(links.joined())</ul>\(problems)\(warnings(diagnostics))", scripts: [])
    }

    /// The page of one form; `diagnostics` are its own spec's.
    public static func form(_ form: FormDefinition, diagnostics: [Diagnostic], version: String) -> String {
        guard diagnostics.allSatisfy({ $0.severity != .error }) else { return errors(diagnostics, version: version) }
        let body = """
            <h1>\(escape(form.name)) <small>version \(form.version) · <code>\(escape(form.endpoint))</code></small></h1>
            \(form.summary.map { "<p>\(escape($0))</p>" } ?? "")
            <main><section id="form"></section>
            <aside><h2 id="summary"></h2><ol id="errors"></ol><h3>Payload</h3><pre id="payload"></pre></aside></main>
            \(warnings(diagnostics))
            """
        return document(title: "\(form.name) — FormSync preview", version: version, body: body, scripts: ["/forms/\(form.name).js"])
    }

    /// The spec errors, each at its position, in place of the forms.
    public static func errors(_ diagnostics: [Diagnostic], version: String) -> String {
        let lines = diagnostics.map { "<li class=\"\($0.severity.rawValue)\"><code>\(escape($0.description))</code></li>" }
        return document(
            title: "Spec errors — FormSync preview", version: version,
            body:
                "<h1>The specs do not check</h1><p>Fix these and save: the page reloads.</p><ol class=\"diagnostics\">\(lines.joined())</ol>",
            scripts: [])
    }

    static func warnings(_ diagnostics: [Diagnostic]) -> String {
        let list = diagnostics.filter { $0.severity == .warning }
        guard !list.isEmpty else { return "" }
        return "<ol class=\"diagnostics\">" + list.map { "<li class=\"warning\"><code>\(escape($0.description))</code></li>" }.joined()
            + "</ol>"
    }

    static func document(title: String, version: String, body: String, scripts: [String]) -> String {
        let start = scripts.isEmpty ? "" : "<script>FS.start();</script>"
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <style>\(style)</style></head>
            <body><header><a href="/">FormSync preview</a></header>
            \(body)
            <script src="/formsync.js"></script>\(scripts.map { "<script src=\"\(escape($0))\"></script>" }.joined())\(start)
            <script>\(reload(version))</script>
            </body></html>
            """
    }

    /// Polls `/version`; a change reloads the page. Served from a file, the poll finds nothing and stops.
    static func reload(_ version: String) -> String {
        """
        (function poll() { fetch("/version").then((r) => r.text()).then((v) => { if (v !== \(jsonString(version))) location.reload(); else setTimeout(poll, 700); }).catch(() => setTimeout(poll, 2000)); })();
        """
    }

    static let style = """
        body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em 2em;color:#222}header{padding:.6em 0;border-bottom:1px solid #ddd;margin-bottom:1em}
        h1 small{font-weight:normal;color:#666;font-size:.6em}main{display:flex;gap:2em;align-items:flex-start}
        #form{flex:1 1 55%}aside{flex:1 1 45%;position:sticky;top:1em}
        .field{display:grid;grid-template-columns:11em 1fr;gap:.2em 1em;padding:.35em .4em;border-radius:4px}
        .field .note{grid-column:2;color:#777;font-size:.85em}.field.invalid{background:#fff1f0}
        .field input[readonly],.field select:disabled{background:#f4f4f4;color:#333}
        .item{border:1px solid #ddd;border-radius:6px;margin:.4em 0;padding:.3em}.multi label{margin-right:.8em}
        pre{background:#f7f7f7;padding:.8em;border-radius:6px;overflow:auto;max-height:32em}
        #errors li,.diagnostics li{margin:.2em 0}.diagnostics .error code{color:#b00}.diagnostics .warning code{color:#850}
        input[type=text]{width:14em}[hidden]{display:none!important}
        """

    /// Text for HTML.
    static func escape(_ text: String) -> String {
        var out = ""
        for ch in text {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(ch)
            }
        }
        return out
    }
}
