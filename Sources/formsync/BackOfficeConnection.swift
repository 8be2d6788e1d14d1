import FormSyncClient
import FormSyncCommandLine
import FormSyncProtocol
import Foundation

/// What a command of the back office needs (`formsync devices`, `formsync export`): the
/// server's base URL (`--server`), the workspace (`--workspace`) and a back-office token, read
/// from the `FORMSYNC_TOKEN` environment variable (never from the command line, where other
/// users of the machine could read it). A mistake in any is a usage error.
struct BackOfficeConnection {
    var server: URL
    /// `--server` as given (an export remembers it).
    var serverText: String
    var workspace: String
    var token: String

    init(_ args: Arguments) throws {
        guard let text = args.values["--server"], let server = URL(string: text), text.hasPrefix("https://") || text.hasPrefix("http://")
        else { throw UsageError("--server takes the server's base URL (https://…)") }
        guard let workspace = args.values["--workspace"], Identifier.isValid(workspace) else {
            throw UsageError("--workspace takes a workspace name (\(Identifier.rule))")
        }
        guard let token = ProcessInfo.processInfo.environment["FORMSYNC_TOKEN"], !token.isEmpty,
            token.utf8.count <= CredentialRules.maxCredentialBytes
        else { throw UsageError("set FORMSYNC_TOKEN to a back-office access token") }
        (self.server, serverText, self.workspace, self.token) = (server, text, workspace, token)
    }

    /// A transport that sends the token with every request, and waits at most `timeout`.
    func transport(timeout: Duration) -> HTTPTransport {
        let token = token
        return HTTPTransport(workspace: workspace, baseURL: server, timeout: timeout) { token }
    }
}
