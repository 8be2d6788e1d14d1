/// Builds endpoint paths from payload values: each value is one percent-encoded path segment, so
/// a value holding `/` or `?`, or being `.` or `..`, cannot change which resource is addressed.
public enum PathSegment {
    /// The URI unreserved characters (docs/PROTOCOL.md §2), the only ones left as they are.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// `value` percent-encoded as a path segment; a missing value gives an empty segment, which
    /// validation has already refused for a required field.
    public static func encode(_ value: String?) -> String {
        guard let value else { return "" }
        // "." and ".." are dot segments: a URL stack would remove them and readdress the request.
        if value == "." { return "%2E" }
        if value == ".." { return "%2E%2E" }
        var out = ""
        for byte in value.utf8 {
            if isUnreserved(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}
