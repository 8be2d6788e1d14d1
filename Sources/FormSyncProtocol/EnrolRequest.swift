/// The body of `POST /auth/enrol`: a device trades an enrolment's code for credentials of its
/// own (docs/PROTOCOL.md, "Devices and credentials").
public struct EnrolRequest: Codable, Sendable, Equatable {
    /// The code, as the link carried it or a person typed it.
    public var code: String
    /// An id the app made once for this installation (`CredentialRules.isInstallationID`): with
    /// it, an enrolment whose reply was lost can be sent again and still succeeds, once.
    public var installation: String?
    public var device: DeviceReport

    public init(code: String, installation: String?, device: DeviceReport) {
        self.code = code
        self.installation = installation
        self.device = device
    }
}
