import FormSyncModel
import Foundation
import Testing

@testable import FormSyncClient

/// What a server says of files and features is read within bounds: absurd or hostile values
/// are no value at all, never a trap or an unbounded list.
struct FileHeaderReadingTests {
    @Test func aContentRangeIsReadOnlyWhenItIsOneRangeWithinItsTotal() {
        #expect(HTTPTransport.contentRange("bytes 0-99/100")! == (0, 99, 100))
        #expect(HTTPTransport.contentRange("bytes 4194304-8299999/8300000")! == (4_194_304, 8_299_999, 8_300_000))
        for hostile in [
            "bytes 5-4/10", "bytes 0-10/10", "bytes -1-5/10", "bytes 0-5/0", "bytes 0-5/*", "bytes */10", "items 0-5/10",
            "bytes 0-99999999999999999999/100", "bytes 0-5/10, 6-9/10", "bytes +1-5/10", "bytes 1-+5/10",
            String(repeating: "9", count: 100), "",
        ] {
            #expect(HTTPTransport.contentRange(hostile) == nil, "\(hostile)")
        }
    }

    @Test func featuresAreAFewShortTokensAndAnAbsurdHeaderIsNone() {
        #expect(DeliveryDetails.features("deferred-files, file-lookup") == ["deferred-files", "file-lookup"])
        #expect(DeliveryDetails.features(nil) == nil)
        #expect(DeliveryDetails.features(String(repeating: "x", count: 5_000)) == nil)
        let many = (0..<500).map { "f\($0)" }.joined(separator: ",")
        #expect(DeliveryDetails.features(many)?.count == 32)
        #expect(DeliveryDetails.features("\(String(repeating: "y", count: 65)), ok") == ["ok"])
    }

    @Test func aDigestIsSHA256OfThirtyTwoBytesInItsOneFormOrNothing() {
        let digest = FileRef.digestText(Data(repeating: 7, count: 32))
        #expect(FileRef.sha256(of: digest) == Data(repeating: 7, count: 32))
        for hostile in [
            "sha-256=:AAAA:", "sha-512=:\(Data(count: 32).base64EncodedString()):", "sha-256=:\(Data(count: 31).base64EncodedString())=:",
            String(repeating: "s", count: 54), "sha-256=\(Data(count: 32).base64EncodedString())::", "",
        ] {
            #expect(FileRef.sha256(of: hostile) == nil, "\(hostile)")
        }
    }
}
