import FormSyncClient
import FormSyncCommandLine
import FormSyncProtocol
import Foundation

/// `formsync devices`: the back office's side of people and devices (docs/PROTOCOL.md,
/// "Devices and credentials"), against any FormSync server, with a back-office token: enrol a
/// device (print its link), list the workspace's devices, revoke a device or a principal's, ask
/// a device for its support bundle and read what devices sent.
enum DevicesCommand {
    static let help = """
        usage: formsync devices --server URL --workspace W [--principal P]
               formsync devices --server URL --workspace W --enrol PRINCIPAL [--role device|back-office] [--expires SECONDS]
                                [--qr FILE.svg|FILE.pbm|-]
               formsync devices --server URL --workspace W --revoke DEVICE_ID [--reason TEXT]
               formsync devices --server URL --workspace W --revoke-principal PRINCIPAL [--reason TEXT]
               formsync devices --server URL --workspace W --ask-bundle DEVICE_ID [--reason TEXT]
               formsync devices --server URL --workspace W --bundles DEVICE_ID

        The back office's token is read from the FORMSYNC_TOKEN environment variable (never from
        the command line, where other users of the machine could read it).
          (default)            the workspace's devices as JSON: whose, their name, app and spec
                               versions, enrolment, last sighting and revocation (--principal:
                               one principal's)
          --enrol PRINCIPAL    makes a single-use enrolment code for one device of PRINCIPAL
                               (valid --expires seconds, 60 to 604800, an hour by default) and
                               prints the link to show the device (its QR code's text);
                               --qr also writes the link's QR code to FILE (SVG or a PBM
                               bitmap), or draws it on standard error (-)
          --revoke DEVICE_ID   cuts one device off at once, on every node
          --revoke-principal P cuts off every device of P
          --ask-bundle DEVICE_ID asks the device for its support bundle: it gets the request in
                               its next pull and sends the bundle in that sync
          --bundles DEVICE_ID  prints the support bundles the device sent, newest first
        Exit status: 0 done, 1 the server refused or did not answer, 2 a usage mistake.
        """

    static func run(_ raw: [String]) async throws -> Int32 {
        let args = try Arguments(
            raw,
            options: [
                "--server", "--workspace", "--principal", "--enrol", "--role", "--expires", "--revoke", "--revoke-principal", "--reason",
                "--ask-bundle", "--bundles", "--qr",
            ],
            flags: ["--help", "-h"])
        if args.flags.contains("--help") || args.flags.contains("-h") {
            print(help)
            return 0
        }
        let connection = try BackOfficeConnection(args)
        let actions = ["--enrol", "--revoke", "--revoke-principal", "--ask-bundle", "--bundles"].filter { args.values[$0] != nil }
        guard actions.count <= 1 else { throw UsageError("give one of --enrol, --revoke, --revoke-principal, --ask-bundle, --bundles") }
        for option in ["--ask-bundle", "--bundles"] {
            if let device = args.values[option], !Identifier.isValid(device) {
                throw UsageError("\(option) takes a device id (\(Identifier.rule))")
            }
        }
        let transport = connection.transport(timeout: .seconds(30))
        if let target = args.values["--qr"], target != "-", !["svg", "pbm"].contains((target as NSString).pathExtension.lowercased()) {
            throw UsageError("--qr writes FILE.svg or FILE.pbm, or - for standard error")
        }
        if let principal = args.values["--enrol"] {
            var expires: Int64?
            if let text = args.values["--expires"] {
                guard let value = Int64(text), CredentialRules.enrolmentSeconds.contains(value) else {
                    throw UsageError("--expires takes 60 to 604800 seconds")
                }
                expires = value
            }
            let reply = await transport.makeEnrolment(
                EnrolmentRequest(principal: principal, role: args.values["--role"], expiresIn: expires))
            guard case .done(let enrolment) = reply, let code = EnrolmentCode(reading: enrolment.code) else { return failed(reply) }
            let link = EnrolmentLink(server: connection.serverText, workspace: connection.workspace, code: code)
            printError("one device of \(enrolment.principal) (\(enrolment.role)), until \(enrolment.expiresAt); code \(code)")
            if let target = args.values["--qr"] {
                guard let qr = EnrolmentQRCode(link.description) else { throw UsageError("the link is too long for a QR code") }
                if target == "-" { printError(qr.terminal) } else { try qr.write(to: target) }
            }
            print(link)
            return 0
        }
        if let device = args.values["--revoke"] ?? args.values["--revoke-principal"] {
            let request =
                args.values["--revoke"] != nil
                ? RevocationRequest(deviceID: device, reason: args.values["--reason"])
                : RevocationRequest(principal: device, reason: args.values["--reason"])
            let reply = await transport.revoke(request)
            guard case .done(let revocation) = reply else { return failed(reply) }
            print(try OutboxCommand.render(["revoked": revocation.revoked]))
            return 0
        }
        if let device = args.values["--ask-bundle"] {
            let reply = await transport.requestSupportBundle(SupportRequestCreate(deviceID: device, reason: args.values["--reason"]))
            guard case .done(let request) = reply else { return failed(reply) }
            return try printed(request)
        }
        if let device = args.values["--bundles"] {
            let reply = await transport.supportBundles(device: device, limit: 10)
            guard case .done(let list) = reply else { return failed(reply) }
            return try printed(list)
        }
        let reply = await transport.devices(principal: args.values["--principal"])
        guard case .done(let list) = reply else { return failed(reply) }
        return try printed(list)
    }

    private static func printed(_ value: some Encodable) throws -> Int32 {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
        return 0
    }

    private static func failed<Value>(_ reply: BackOfficeReply<Value>) -> Int32 {
        switch reply {
        case .done: return 0
        case .refused(let code, let detail): printError("formsync devices: refused (\(code?.rawValue ?? "no code")): \(detail)")
        case .unreachable(let reason): printError("formsync devices: no FormSync server answered: \(reason)")
        }
        return 1
    }
}
