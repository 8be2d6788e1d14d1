import FieldForms
import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import FormSyncTesting
import FormSyncTorture
import Foundation
import Testing

/// The back-office console in a real browser: headless Chromium, driven over its DevTools
/// protocol by a small Python program, signs in with a back-office token, lists the
/// submissions, opens a document (its versions side by side, its photo), sends it back with an
/// issue, and reads the webhooks' dead letters and the devices. The screenshots it takes are
/// docs/images/console-*.png (`FORMSYNC_CONSOLE_SCREENSHOTS=docs/images` writes them there).
struct ConsoleBrowserTests {
    static let driver = #"""
        base64, json, os, socket, struct, subprocess, sys, tempfile, time = (__import__(n) for n in ("base64", "json", "os", "socket", "struct", "subprocess", "sys", "tempfile", "time"))
        urllib = __import__("urllib.request")

        def launch(chromium):
            profile = tempfile.mkdtemp(prefix="console-chromium-")
            proc = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                     "--window-size=1280,900", "--remote-debugging-port=0", "--user-data-dir=" + profile, "about:blank"],
                                    stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
            deadline = time.time() + 60
            while time.time() < deadline:
                line = proc.stderr.readline().decode(errors="replace")
                if "DevTools listening on ws://" in line:
                    port = int(line.split("ws://127.0.0.1:")[1].split("/")[0])
                    return proc, port
                if not line and proc.poll() is not None:
                    break
            raise SystemExit("Chromium did not start its DevTools endpoint")

        class Page:
            def __init__(self, port):
                targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port))
                url = [t for t in targets if t["type"] == "page"][0]["webSocketDebuggerUrl"]
                path = "/" + url.split("/", 3)[3]
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
                key = base64.b64encode(os.urandom(16)).decode()
                self.sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                   "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, port, key)).encode())
                head = b""
                while b"\r\n\r\n" not in head:
                    head += self.sock.recv(1)
                if b" 101 " not in head.split(b"\r\n")[0]:
                    raise SystemExit("no WebSocket upgrade: %r" % head)
                self.next = 0
                self.events = []

            def _recv_exact(self, n):
                data = b""
                while len(data) < n:
                    chunk = self.sock.recv(n - len(data))
                    if not chunk: raise SystemExit("the DevTools connection closed")
                    data += chunk
                return data

            def _frame(self):
                message = b""
                while True:
                    b0, b1 = self._recv_exact(2)
                    length = b1 & 0x7F
                    if length == 126: length = struct.unpack(">H", self._recv_exact(2))[0]
                    elif length == 127: length = struct.unpack(">Q", self._recv_exact(8))[0]
                    payload = self._recv_exact(length)
                    opcode = b0 & 0x0F
                    if opcode in (0, 1, 2): message += payload
                    if b0 & 0x80 and opcode in (0, 1, 2): return message

            def call(self, method, **params):
                self.next += 1
                data = json.dumps({"id": self.next, "method": method, "params": params}).encode()
                header = bytes([0x81])
                mask = os.urandom(4)
                if len(data) < 126: header += bytes([0x80 | len(data)])
                elif len(data) < 65536: header += bytes([0x80 | 126]) + struct.pack(">H", len(data))
                else: header += bytes([0x80 | 127]) + struct.pack(">Q", len(data))
                self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
                while True:
                    reply = json.loads(self._frame())
                    if reply.get("id") == self.next:
                        if "error" in reply: raise SystemExit("%s: %s" % (method, reply["error"]))
                        return reply.get("result", {})
                    self.events.append(reply)

            def wait_for(self, event):
                while True:
                    for i, e in enumerate(self.events):
                        if e.get("method") == event:
                            del self.events[: i + 1]
                            return e
                    self.events.append(json.loads(self._frame()))

            def load(self, action):
                self.events = []
                action()
                self.wait_for("Page.loadEventFired")

            def js(self, expression):
                result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
                if "exceptionDetails" in result: raise SystemExit("script failed: %s" % result["exceptionDetails"])
                return result["result"].get("value")

            def shot(self, path, height=900):
                self.call("Emulation.setDeviceMetricsOverride", width=1280, height=height, deviceScaleFactor=1, mobile=False)
                data = self.call("Page.captureScreenshot", format="png")["data"]
                open(path, "wb").write(base64.b64decode(data))

        def main():
            mode, chromium = sys.argv[1], sys.argv[2]
            proc, port = launch(chromium)
            try:
                page = Page(port)
                page.call("Page.enable")
                if mode == "jpeg":
                    jpeg = page.js("""(() => { const c = document.createElement('canvas'); c.width = 320; c.height = 200;
                      const g = c.getContext('2d'); g.fillStyle = '#87b5e5'; g.fillRect(0, 0, 320, 200);
                      g.fillStyle = '#f2e3c6'; g.fillRect(60, 70, 200, 110); g.fillStyle = '#b3261e'; g.fillRect(60, 50, 200, 28);
                      g.fillStyle = '#fff'; g.font = 'bold 18px sans-serif'; g.fillText('CASA ANA', 112, 70);
                      g.fillStyle = '#5b3a1a'; g.fillRect(145, 120, 30, 60); return c.toDataURL('image/jpeg', 0.9).split(',')[1]; })()""")
                    open(sys.argv[3], "wb").write(base64.b64decode(jpeg))
                    return
                base, workspace, token, document, shots = sys.argv[3:8]
                out = {}
                page.load(lambda: page.call("Page.navigate", url=base + "/console/submissions"))
                out["redirectedTo"] = page.js("location.pathname")
                page.shot(os.path.join(shots, "console-sign-in.png"), 520)
                page.js("document.getElementById('workspace').value = %s; document.getElementById('token').value = %s;" % (json.dumps(workspace), json.dumps(token)))
                page.load(lambda: page.js("document.getElementById('sign-in').click()"))
                out["listed"] = page.js("document.getElementById('submissions').innerText")
                page.shot(os.path.join(shots, "console-submissions.png"), 560)
                page.load(lambda: page.js("document.querySelector('a[href=\"/console/documents/%s\"]').click()" % document))
                out["photoLoaded"] = page.js("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0) && document.images.length")
                page.js("""document.getElementById('verdict').value = 'has-issues';
                           document.getElementById('comment').value = 'The shop front photo is of the wrong shop';
                           document.getElementById('pointer').value = '#/shop_front';
                           document.getElementById('detail').value = 'Take it again from the street';""")
                page.load(lambda: page.js("document.getElementById('send-review').click()"))
                out["reviews"] = page.js("document.getElementById('reviews') && document.getElementById('reviews').innerText")
                page.shot(os.path.join(shots, "console-document.png"), 1250)
                page.load(lambda: page.call("Page.navigate", url=base + "/console/webhooks"))
                out["webhooks"] = page.js("document.querySelector('main').innerText")
                page.shot(os.path.join(shots, "console-webhooks.png"), 520)
                page.load(lambda: page.call("Page.navigate", url=base + "/console/devices"))
                out["devices"] = page.js("document.querySelector('main').innerText")
                page.shot(os.path.join(shots, "console-devices.png"), 420)
                print(json.dumps(out))
            finally:
                proc.kill()
                proc.wait()

        main()
        """#

    @Test func aSupervisorReviewsASubmissionThroughTheConsoleInChromium() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: PreviewBrowserTests.chromium),
            "the console test needs Chromium: apt-get install chromium (.ci/run installs it)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("console-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try TestStore.server(
            directory: folder.appendingPathComponent("server").path, forms: FormCatalog.forms, records: FormCatalog.records)
        _ = try server.start()
        defer { server.stop() }
        let script = folder.appendingPathComponent("driver.py")
        try Self.driver.write(to: script, atomically: true, encoding: .utf8)

        // A real photo: Chromium draws one and gives it as a JPEG.
        let jpegFile = folder.appendingPathComponent("front.jpg")
        let made = try await ExportTests.python([script.path, "jpeg", PreviewBrowserTests.chromium, jpegFile.path])
        #expect(made.status == 0, "\(made.errors)")
        let jpeg = try Data(contentsOf: jpegFile)

        let ada = try server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        let office = try server.issueAccessToken(principal: "supervisor", workspaces: ["acme"], role: .backOffice)
        var key = 0
        func send(_ method: String, _ path: String, headers: [String: String], body: Data) -> HTTPResponse? {
            key += 1
            var all = ["authorization": "Bearer \(ada)", "formsync-workspace": "acme", "idempotency-key": "k-\(key)"]
            all.merge(headers) { _, new in new }
            return server.handle(HTTPRequest(method: method, path: path, query: nil, headers: all, body: body))
        }
        let stored = send(
            "POST", "/files",
            headers: [
                "formsync-document": "front-1", "content-type": "image/jpeg", "content-digest": FileRef.digestText(SHA256.hash(jpeg)),
            ],
            body: jpeg)
        let fileID = try #require(((try? JSONSerialization.jsonObject(with: stored?.body ?? Data())) as? [String: Any])?["id"] as? NSNumber)
        let form = ["formsync-form": "NewCustomer; version=\(NewCustomer.formVersion)", "content-type": "application/json"]
        var customer = NewCustomer(
            name: "Casa Ana", segment: .retail,
            shopFront: FileRef(id: fileID.int64Value, byteCount: Int64(jpeg.count), contentType: "image/jpeg"),
            acceptsCash: true)
        #expect(
            send(
                "POST", "/customers", headers: form.merging(["formsync-document": "customer-1"]) { a, _ in a },
                body: try FormRegistry.encode(customer))?.status == 201)
        customer.name = "Casa Ana, Lda."
        #expect(
            send(
                "POST", "/customers", headers: form.merging(["formsync-document": "customer-1", "if-match": "\"1\""]) { a, _ in a },
                body: try FormRegistry.encode(customer))?
                .status == 200)
        #expect(
            send(
                "POST", "/customers", headers: form.merging(["formsync-document": "customer-2"]) { a, _ in a },
                body: try FormRegistry.encode(NewCustomer(name: "Padaria Sol", segment: .horeca)))?
                .status == 201)
        // A receiver that is never there, and a retry window already closed: a dead letter.
        var policy = server.webhooks.policy
        policy.retryWindowSeconds = 0
        server.webhooks.policy = policy
        let hook = server.handle(
            HTTPRequest(
                method: "POST", path: "/webhooks", query: nil,
                headers: ["authorization": "Bearer \(office)", "formsync-workspace": "acme"],
                body: try JSONEncoder().encode(WebhookCreate(url: "http://127.0.0.1:9/erp", events: [.accepted]))))
        #expect(hook?.status == 201)
        let third = send(
            "POST", "/customers", headers: form.merging(["formsync-document": "customer-3"]) { a, _ in a },
            body: try FormRegistry.encode(NewCustomer(name: "Talho Norte", segment: .retail)))
        #expect(third?.status == 201)
        #expect(server.webhooks.deliver().dead == 1)
        let code = try server.makeEnrolment(principal: "ada", workspace: "acme").code.description
        let enrolled = server.handle(
            HTTPRequest(
                method: "POST", path: "/auth/enrol", query: nil, headers: [:],
                body: try JSONEncoder().encode(
                    EnrolRequest(code: code, installation: "install-van-0012", device: DeviceReport(name: "Van 12")))))
        #expect(enrolled?.status == 201)

        // Not signed in: the console sends the browser to its sign-in page.
        let anonymous = server.handle(HTTPRequest(method: "GET", path: "/console/submissions", query: nil, headers: [:], body: Data()))
        #expect(anonymous?.status == 303 && anonymous?.headers.contains { $0 == ("Location", "/console/login") } == true)

        let shots = ProcessInfo.processInfo.environment["FORMSYNC_CONSOLE_SCREENSHOTS"].map { URL(fileURLWithPath: $0) } ?? folder
        let run = try await ExportTests.python([
            script.path, "console", PreviewBrowserTests.chromium, server.baseURL.absoluteString, "acme", office, "customer-1", shots.path,
        ])
        #expect(run.status == 0, "\(run.errors)")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any], "\(run.output)")
        #expect(seen["redirectedTo"] as? String == "/console/login")
        #expect((seen["listed"] as? String)?.contains("customer-1") == true && (seen["listed"] as? String)?.contains("customer-3") == true)
        #expect(seen["photoLoaded"] as? Int == 1, "the shop front shows")
        #expect((seen["reviews"] as? String)?.contains("has-issues of version 2 by supervisor") == true, "\(seen)")
        #expect((seen["webhooks"] as? String)?.contains("dead") == true && (seen["webhooks"] as? String)?.contains("Resend") == true)
        #expect((seen["devices"] as? String)?.contains("ada") == true)
        for page in ["sign-in", "submissions", "document", "webhooks", "devices"] {
            let size =
                (try? FileManager.default.attributesOfItem(atPath: shots.appendingPathComponent("console-\(page).png").path)[.size] as? Int)
                ?? 0
            #expect(size > 1000, "a screenshot of \(page)")
        }

        // What the page sent is the back office's review, in the document's history.
        let history = server.handle(
            HTTPRequest(
                method: "GET", path: "/documents/customer-1/history", query: nil,
                headers: ["authorization": "Bearer \(office)", "formsync-workspace": "acme"], body: Data()))
        let entries = try JSONDecoder().decode(VersionHistory.self, from: history?.body ?? Data()).entries
        let review = try #require(entries.last?.review)
        #expect(review.verdict == .hasIssues && review.reviewer == "supervisor" && review.version == 2)
        #expect(review.issues == [Review.Issue(pointer: "#/shop_front", detail: "Take it again from the street")])
    }
}
