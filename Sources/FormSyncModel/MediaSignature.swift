import Foundation

/// What a file's first bytes say it is: the media type is the bytes' word, never the app's
/// (docs/PROTOCOL.md, file fields). The device checks a captured file against its field's
/// `content_types` at enqueue, and the server checks what it stored, with the same reading.
///
/// Recognised: JPEG, PNG, HEIC/HEIF, PDF, the ISO base media family (MP4, QuickTime MOV, M4A,
/// 3GPP), WAV and ADTS AAC. Anything else is `nil`: unknown, which a field that lists media
/// types refuses and a field that accepts any type lets through.
public enum MediaSignature {
    /// How many leading bytes `mediaType(of:)` reads at most.
    public static let prefixLength = 32

    /// The media type the bytes' signature names (`image/jpeg`, `video/mp4`, …), or nil.
    public static func mediaType(of bytes: some Collection<UInt8>) -> String? {
        let head = Array(bytes.prefix(prefixLength))
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + signature.count && Array(head[offset..<(offset + signature.count)]) == signature
        }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts(Array("%PDF-".utf8)) { return "application/pdf" }
        if starts(Array("RIFF".utf8)) && starts(Array("WAVE".utf8), at: 8) { return "audio/wav" }
        if starts(Array("ftyp".utf8), at: 4), head.count >= 12 {
            return isoMedia(brand: String(decoding: head[8..<12], as: UTF8.self))
        }
        // ADTS: a 12-bit sync word, then MPEG version, layer 00.
        if head.count >= 2, head[0] == 0xFF, head[1] & 0xF6 == 0xF0 { return "audio/aac" }
        return nil
    }

    /// The media type of the file at `path` by its first bytes; nil when it cannot be read or
    /// is not recognised.
    public static func mediaType(ofFileAt path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: prefixLength) else { return nil }
        return mediaType(of: head)
    }

    /// The ISO base media file format's major brand, read as a media type.
    static func isoMedia(brand: String) -> String? {
        switch brand {
        case "heic", "heix", "hevc", "hevx", "heim", "heis": return "image/heic"
        case "mif1", "msf1": return "image/heif"
        case "M4A ", "M4B ", "M4P ": return "audio/mp4"
        case "qt  ": return "video/quicktime"
        case "3gp4", "3gp5", "3gp6", "3g2a": return "video/3gpp"
        case "isom", "iso2", "iso3", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "dash", "M4V ", "MSNV": return "video/mp4"
        default: return nil
        }
    }

    /// Whether a file whose bytes say `detected` may stand in a field that accepts `accepted`
    /// (`image/jpeg`, or a family such as `image/*`), comparing without regard to case.
    /// `audio/x-m4a` and `audio/m4a` are read as `audio/mp4`, `image/jpg` as `image/jpeg`,
    /// `audio/x-wav` and `audio/wave` as `audio/wav`.
    public static func matches(_ detected: String, accepted: String) -> Bool {
        let detected = canonical(detected)
        let accepted = canonical(accepted)
        if accepted == "*/*" { return true }
        if accepted.hasSuffix("/*") { return detected.hasPrefix(accepted.dropLast()) }
        return detected == accepted
    }

    static func canonical(_ type: String) -> String {
        let bare = type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        switch bare {
        case "image/jpg", "image/pjpeg": return "image/jpeg"
        case "audio/x-m4a", "audio/m4a": return "audio/mp4"
        case "audio/x-wav", "audio/wave", "audio/vnd.wave": return "audio/wav"
        case "audio/x-aac": return "audio/aac"
        default: return bare
        }
    }
}
