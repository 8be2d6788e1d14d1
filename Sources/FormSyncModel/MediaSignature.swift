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

    /// `type` lower case, without parameters, with common aliases read as their registered name.
    package static func canonical(_ type: String) -> String {
        let bare = type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        switch bare {
        case "image/jpg", "image/pjpeg": return "image/jpeg"
        case "audio/x-m4a", "audio/m4a": return "audio/mp4"
        case "audio/x-wav", "audio/wave", "audio/vnd.wave": return "audio/wav"
        case "audio/x-aac": return "audio/aac"
        default: return bare
        }
    }

    /// Why a file whose bytes say `detected` (nil: not recognised) cannot stand as `declared` in
    /// a field accepting `accepted` (empty: any); nil when it can. Bytes of a type this reading
    /// knows must be what the app declared and what the field accepts; bytes it does not know
    /// are refused only where every type in question is one it knows (a "JPEG" that is not one),
    /// so that a field accepting `text/csv` still takes a CSV file.
    package static func problem(detected: String?, declared: String?, accepted: [String]) -> String? {
        guard let detected else {
            if let declared, signature(of: declared) != nil { return "The file's bytes are not \(canonical(declared))." }
            if declared == nil, !accepted.isEmpty, accepted.allSatisfy({ signature(of: $0) != nil }) {
                return "The file's bytes are not \(accepted.joined(separator: " or "))."
            }
            return nil
        }
        if let declared, !matches(detected, accepted: declared) { return "The file's bytes are \(detected), not \(canonical(declared))." }
        if !accepted.isEmpty, !accepted.contains(where: { matches(detected, accepted: $0) }) {
            return "The file's bytes are \(detected); this field accepts \(accepted.joined(separator: ", "))."
        }
        return nil
    }

    /// The first bytes of a file of `type` (at least what `mediaType(of:)` reads as it), for
    /// sample files: test data, the demo and the conformance suite; nil for a type not recognised.
    package static func signature(of type: String) -> [UInt8]? {
        func iso(_ brand: String) -> [UInt8] { [0, 0, 0, 0x18] + Array("ftyp".utf8) + Array(brand.utf8) + [0, 0, 0, 0] }
        switch canonical(type) {
        case "image/jpeg": return [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0]
        case "image/png": return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        case "application/pdf": return Array("%PDF-1.7\n".utf8)
        case "audio/wav": return Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WAVE".utf8)
        case "audio/aac": return [0xFF, 0xF1, 0x50, 0x80]
        case "image/heic": return iso("heic")
        case "image/heif": return iso("mif1")
        case "audio/mp4": return iso("M4A ")
        case "video/quicktime": return iso("qt  ")
        case "video/3gpp": return iso("3gp5")
        case "video/mp4": return iso("isom")
        default: return nil
        }
    }

    /// `data` with its first bytes made the signature of the type a file named `name` has by its
    /// extension (`.jpg`, `.png`, `.heic`, `.pdf`, `.mp4`, `.mov`, `.m4a`, `.wav`, `.aac`);
    /// unchanged for any other name or data too short to hold it.
    package static func stamped(_ data: Data, asFileNamed name: String) -> Data {
        let types = [
            "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "heic": "image/heic", "pdf": "application/pdf",
            "mp4": "video/mp4",
            "mov": "video/quicktime", "m4a": "audio/mp4", "wav": "audio/wav", "aac": "audio/aac",
        ]
        guard let dot = name.lastIndex(of: "."), let type = types[name[name.index(after: dot)...].lowercased()],
            let signature = signature(of: type), data.count >= signature.count
        else { return data }
        var copy = data
        copy.replaceSubrange(copy.startIndex..<copy.startIndex + signature.count, with: signature)
        return copy
    }
}
