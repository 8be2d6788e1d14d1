import Foundation

/// The back-office console's HTML: one plain, server-rendered page at a time, no script, so
/// that it works in any browser and a screen reader reads it in order. Every value written into
/// a page goes through `escape`.
enum ConsolePage {
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    /// A whole page: the title, the navigation (when signed in) and `body`.
    static func page(_ title: String, workspace: String?, _ body: String) -> Data {
        let navigation =
            workspace.map { workspace in
                """
                <nav><strong>FormSync</strong> · \(escape(workspace)) ·
                <a href="/console/submissions">Submissions</a> · <a href="/console/webhooks">Webhooks</a> ·
                <a href="/console/devices">Devices</a> · <a href="/console/logout">Sign out</a></nav>
                """
            } ?? "<nav><strong>FormSync</strong></nav>"
        return Data(
            """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title)) · FormSync</title>
            <style>
            body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f6f7f9; }
            nav { background: #1f3a5f; color: #fff; padding: 10px 20px; } nav a { color: #dbe7ff; }
            main { padding: 16px 20px; max-width: 1200px; }
            table { border-collapse: collapse; width: 100%; background: #fff; margin: 8px 0 18px; }
            th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid #e3e6ea; vertical-align: top; font-size: 14px; }
            th { background: #eef1f5; }
            .versions { display: flex; gap: 12px; overflow-x: auto; }
            .version { background: #fff; border: 1px solid #dde2e8; border-radius: 6px; padding: 10px; min-width: 280px; }
            .changed { background: #fff3c4; }
            .verdict-approved { color: #17743a; } .verdict-has-issues { color: #a15c00; } .verdict-rejected { color: #b3261e; }
            .dead { color: #b3261e; } .pending { color: #a15c00; } .delivered { color: #17743a; }
            form.review { background: #fff; border: 1px solid #dde2e8; border-radius: 6px; padding: 12px; max-width: 560px; }
            form.review label { display: block; margin: 6px 0 2px; } form.review textarea, form.review input[type=text] { width: 100%; }
            img.photo { max-width: 240px; max-height: 180px; display: block; margin: 4px 0; border-radius: 4px; }
            .muted { color: #66707a; font-size: 13px; }
            </style></head>
            <body>\(navigation)<main><h1>\(escape(title))</h1>
            \(body)
            </main></body></html>
            """.utf8)
    }
}
