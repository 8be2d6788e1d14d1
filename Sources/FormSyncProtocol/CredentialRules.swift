/// The bounds on every value of enrolment, refresh and revocation (docs/PROTOCOL.md, "Devices
/// and credentials"): what a server refuses and a client never sends.
public enum CredentialRules {
    /// The most characters of a device's name, an app or spec version.
    public static let maxLabelCharacters = 64
    /// The most characters of a revocation's reason.
    public static let maxReasonCharacters = 200
    /// The most bytes of a principal's name (as for a token's grant).
    public static let maxPrincipalBytes = 128
    /// The most bytes of any token, code or installation id a request carries.
    public static let maxCredentialBytes = 512
    /// An enrolment's lifetime when the back office does not say: one hour.
    public static let defaultEnrolmentSeconds: Int64 = 3600
    /// The shortest and longest enrolment lifetimes a server takes: a minute to a week.
    public static let enrolmentSeconds: ClosedRange<Int64> = 60...(7 * 24 * 3600)

    /// Whether `text` is at most `maxCharacters` characters with no control character (so no
    /// line break) and no Unicode line or paragraph separator: a label a log line or a table
    /// can show as it is.
    public static func isLabel(_ text: String, maxCharacters: Int) -> Bool {
        guard text.utf8.count <= maxCharacters * 4, text.count <= maxCharacters else { return false }
        return !text.unicodeScalars.contains { scalar in
            scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
        }
    }

    /// Whether `principal` can be a grant's principal: 1 to 128 bytes, a label (no control
    /// character or line separator).
    public static func isPrincipal(_ principal: String) -> Bool {
        (1...maxPrincipalBytes).contains(principal.utf8.count) && isLabel(principal, maxCharacters: maxPrincipalBytes)
    }

    /// Whether `id` can be an installation's id: 8 to 64 characters of `A-Z a-z 0-9 - _ .`.
    public static func isInstallationID(_ id: String) -> Bool {
        (8...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: ".")
            }
    }
}
