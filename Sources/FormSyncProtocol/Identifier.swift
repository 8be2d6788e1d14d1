/// The protocol's identifiers (docs/PROTOCOL.md, §1): `Idempotency-Key`, `FormSync-Document`,
/// `FormSync-Workspace`, and a device's id. One rule for all of them, here.
public enum Identifier {
    /// The rule, in the words a refusal uses.
    public static let rule = "1 to 128 characters from A-Z a-z 0-9 - . _ ~ :"

    /// Whether `value` is an identifier: 1 to 128 characters from `A–Z a–z 0–9 - . _ ~ :`.
    public static func isValid(_ value: String?) -> Bool {
        guard let value, (1...128).contains(value.utf8.count) else { return false }
        return value.utf8.allSatisfy { byte in
            switch byte {
            case 48...57, 65...90, 97...122, 45, 46, 95, 126, 58: return true
            default: return false
            }
        }
    }
}
