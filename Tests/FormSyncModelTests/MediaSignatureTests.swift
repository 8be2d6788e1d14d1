import FormSyncModel
import Foundation
import Testing

/// A file's media type read from its bytes (issue 34, 3): each recognised signature, what is
/// not one, and how a detected type meets a field's accepted types.
struct MediaSignatureTests {
    static func bytes(_ parts: [UInt8]...) -> [UInt8] { parts.flatMap { $0 } }
    static func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }
    static func iso(_ brand: String) -> [UInt8] { bytes([0, 0, 0, 0x18], ascii("ftyp"), ascii(brand), [0, 0, 0, 0], ascii("isommp42")) }

    @Test(
        arguments: [
            (bytes([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10], ascii("JFIF")), "image/jpeg"),
            (
                Array(
                    Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")!
                ), "image/png"
            ),
            (ascii("%PDF-1.7\n%\u{E2}"), "application/pdf"),
            (bytes(ascii("RIFF"), [0x24, 0x08, 0, 0], ascii("WAVEfmt ")), "audio/wav"),
            (iso("mp42"), "video/mp4"),
            (iso("isom"), "video/mp4"),
            (iso("qt  "), "video/quicktime"),
            (iso("heic"), "image/heic"),
            (iso("mif1"), "image/heif"),
            (iso("M4A "), "audio/mp4"),
            (iso("3gp4"), "video/3gpp"),
            (bytes([0xFF, 0xF1, 0x50, 0x80, 0x02, 0x1F, 0xFC]), "audio/aac"),
        ] as [([UInt8], String)])
    func aKnownSignatureNamesItsMediaType(_ bytes: [UInt8], _ type: String) {
        #expect(MediaSignature.mediaType(of: bytes) == type)
    }

    @Test(
        arguments: [
            [], [0xFF, 0xD8], [0x89, 0x50, 0x4E, 0x47], ascii("hello, world"), ascii("ID3\u{04}"), [0xFF, 0xFB, 0x90, 0x64],
            bytes(ascii("RIFF"), [0x24, 0x08, 0, 0], ascii("AVI LIST")), iso("abcd"), bytes([0, 0, 0, 0x18], ascii("ftyp")),
        ] as [[UInt8]])
    func bytesThatAreNoKnownSignatureAreUnknown(_ bytes: [UInt8]) {
        #expect(MediaSignature.mediaType(of: bytes) == nil)
    }

    @Test func aFileIsReadByItsFirstBytesAndAFileThatIsNotThereIsUnknown() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("signature-\(UUID().uuidString).bin").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(Self.iso("qt  ") + Array(repeating: 0x41, count: 100_000)).write(to: URL(fileURLWithPath: path))
        #expect(MediaSignature.mediaType(ofFileAt: path) == "video/quicktime")
        #expect(MediaSignature.mediaType(ofFileAt: path + ".missing") == nil)
    }

    @Test func aDetectedTypeMeetsAcceptedTypesByFamilyAliasAndCaseButNotAnotherType() {
        #expect(MediaSignature.matches("image/heic", accepted: "image/*"))
        #expect(MediaSignature.matches("image/jpeg", accepted: "IMAGE/JPG"))
        #expect(MediaSignature.matches("audio/mp4", accepted: "audio/x-m4a"))
        #expect(MediaSignature.matches("application/pdf", accepted: "application/pdf; charset=binary"))
        #expect(MediaSignature.matches("video/mp4", accepted: "*/*"))
        #expect(!MediaSignature.matches("video/quicktime", accepted: "video/mp4"))
        #expect(!MediaSignature.matches("image/png", accepted: "image/jpeg"))
        #expect(!MediaSignature.matches("audio/wav", accepted: "video/*"))
    }
}
