/// What an operator shows a new device, as a link or as the QR code of that link:
/// `formsync://enrol?server=<base URL>&workspace=<name>&code=<code>`. The device reads it
/// (`init?(parsing:)`), sends the code to that server's `POST /auth/enrol`, and to nowhere else.
public struct EnrolmentLink: Sendable, Equatable, CustomStringConvertible {
    /// The server's base URL, `https://…` (or `http://` for a server on this machine's loopback).
    public var server: String
    public var workspace: String
    public var code: EnrolmentCode

    /// The most bytes of a link a device reads.
    public static let maxBytes = 2048

    public init(server: String, workspace: String, code: EnrolmentCode) {
        self.server = server
        self.workspace = workspace
        self.code = code
    }

    /// The link a person scanned or pasted, or nil when it is not one: the scheme and host
    /// `formsync://enrol`, each member once, a server that is `https` (or `http` to a loopback
    /// address, for trying it on one machine) with a host and no user, query or fragment, a
    /// workspace name, and a code.
    public init?(parsing text: String) {
        guard text.utf8.count <= Self.maxBytes, text.hasPrefix("formsync://enrol?") else { return nil }
        var members: [String: String] = [:]
        for pair in text.dropFirst("formsync://enrol?".count).split(separator: "&", omittingEmptySubsequences: false) {
            guard let equals = pair.firstIndex(of: "="), let key = Self.percentDecoded(pair[..<equals]),
                let value = Self.percentDecoded(pair[pair.index(after: equals)...]), members[key] == nil
            else { return nil }
            members[key] = value
        }
        guard members.count == 3, let server = members["server"], Self.isServer(server), let workspace = members["workspace"],
            Identifier.isValid(workspace), let code = members["code"].flatMap(EnrolmentCode.init(reading:))
        else { return nil }
        self.init(server: server, workspace: workspace, code: code)
    }

    /// The link as text.
    public var description: String {
        "formsync://enrol?server=\(Self.percentEncoded(server))&workspace=\(Self.percentEncoded(workspace))&code=\(code)"
    }

    /// Whether `server` is a base URL a device may send a code to.
    static func isServer(_ server: String) -> Bool {
        let rest: Substring
        if server.hasPrefix("https://") {
            rest = server.dropFirst("https://".count)
        } else if server.hasPrefix("http://") {
            rest = server.dropFirst("http://".count)
            let host = rest.prefix { $0 != "/" && $0 != ":" }
            guard host == "127.0.0.1" || host == "localhost" || rest.hasPrefix("[::1]") else { return false }
        } else {
            return false
        }
        let authority = rest.prefix { $0 != "/" }
        return !authority.isEmpty && !authority.hasPrefix(":")
            && !rest.contains {
                $0 == "@" || $0 == "?" || $0 == "#" || $0 == "\\" || $0 == " " || $0.asciiValue.map { $0 < 0x21 || $0 == 0x7F } ?? false
            }
    }

    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let unreserved =
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D
                || byte == 0x2E || byte == 0x5F || byte == 0x7E
            if unreserved {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 15)])
            }
        }
        return out
    }

    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(Self.hexValue), let low = iterator.next().flatMap(Self.hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
