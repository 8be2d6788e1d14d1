/// What a device says of itself when it enrols and when it refreshes its token: a name a person
/// gave it, and the versions of the app and of the specs it runs. The back office sees them in
/// the device list (`DeviceSummary`). Each is bounded (`CredentialRules`).
public struct DeviceReport: Codable, Sendable, Equatable {
    /// A name for people ("Van 12, Pixel 7"): 1 to 64 characters on one line.
    public var name: String
    /// The app's version ("2.4.1"): at most 64 characters.
    public var appVersion: String
    /// The version of the specs the app was built with (a spec lock's digest or a release
    /// name): at most 64 characters.
    public var specVersion: String

    public init(name: String, appVersion: String = "", specVersion: String = "") {
        self.name = name
        self.appVersion = appVersion
        self.specVersion = specVersion
    }

    enum CodingKeys: String, CodingKey {
        case name
        case appVersion = "app_version"
        case specVersion = "spec_version"
    }

    /// Why the report cannot be taken, or nil when every member keeps its bounds.
    public var problem: String? {
        if !CredentialRules.isLabel(name, maxCharacters: CredentialRules.maxLabelCharacters) || name.isEmpty {
            return "the device's name is 1 to \(CredentialRules.maxLabelCharacters) characters on one line"
        }
        for (member, value) in [("app_version", appVersion), ("spec_version", specVersion)]
        where !CredentialRules.isLabel(value, maxCharacters: CredentialRules.maxLabelCharacters) {
            return "\(member) is at most \(CredentialRules.maxLabelCharacters) characters on one line"
        }
        return nil
    }
}
