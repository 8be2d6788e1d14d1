import Foundation
import Testing

@testable import FormSyncProtocol

/// The compact page's bytes: what the writer puts is what the reader gives back, and the reader
/// takes nothing on trust (every cut, a wrong magic, a hostile count or length, bytes after the
/// last change).
struct CompactFeedPageTests {
    static let envelope = Data(#"{"changes":[],"cursor":"c1.9","more":true}"#.utf8)

    static func sample() -> Data {
        var writer = CompactFeedPage.Writer(envelope: envelope, count: 3)
        writer.append(kind: .state, type: "Delivery", id: 7, version: 2, record: Data(#"{"a":"x","b":1.50}"#.utf8))
        writer.append(kind: .deleted, type: "Delivery", id: 8)
        writer.append(kind: .outside, type: "Job", id: 9_007_199_254_740_991)
        return writer.body
    }

    @Test func whatTheWriterPutsTheReaderGivesBackWithEachRecordsExactBytes() throws {
        let body = Self.sample()
        let read = try #require(CompactFeedPage.read(body, limit: 10))
        #expect(read.envelope == Self.envelope)
        #expect(read.frames.map(\.kind) == [.state, .deleted, .outside])
        #expect(read.frames.map(\.type) == ["Delivery", "Delivery", "Job"])
        #expect(read.frames.map(\.id) == [7, 8, 9_007_199_254_740_991])
        #expect(read.frames[0].version == 2)
        let record = try #require(read.frames[0].record)
        #expect(body[record] == Data(#"{"a":"x","b":1.50}"#.utf8))
        #expect(read.frames[1].record == nil && read.frames[2].record == nil)
    }

    @Test func aPageCutAnywhereOrWithBytesAfterItsLastChangeIsNotAPage() {
        let body = Self.sample()
        for length in 0..<body.count {
            #expect(CompactFeedPage.read(body.prefix(length), limit: 10) == nil, "cut at \(length)")
        }
        #expect(CompactFeedPage.read(body + Data([0]), limit: 10) == nil)
    }

    @Test func aWrongMagicAnUnknownKindAnEmptyOrInvalidTypeIsNotAPage() {
        let body = Self.sample()
        var wrongMagic = body
        wrongMagic[0] = UInt8(ascii: "X")
        #expect(CompactFeedPage.read(wrongMagic, limit: 10) == nil)
        let firstFrame = 4 + 4 + Self.envelope.count + 4
        var unknownKind = body
        unknownKind[firstFrame] = 9
        #expect(CompactFeedPage.read(unknownKind, limit: 10) == nil)

        for type in [Data(), Data([0xC3, 0x28])] {
            var writer = CompactFeedPage.Writer(envelope: Self.envelope, count: 1)
            writer.append(kind: .deleted, type: "X", id: 1)
            var bytes = writer.body
            // The frame's type, rewritten: its length, then its bytes.
            bytes.replaceSubrange((firstFrame + 1)..<(firstFrame + 4), with: [UInt8(0), UInt8(type.count)] + type)
            #expect(CompactFeedPage.read(bytes, limit: 10) == nil)
        }
    }

    /// A count or a length past what the bytes hold is refused before anything is allocated
    /// for it: a hostile page of a few bytes costs nothing.
    @Test func aHostileCountOrLengthIsRefusedWithoutBeingTakenOnTrust() {
        var huge = CompactFeedPage.Writer(envelope: Self.envelope, count: Int(UInt32.max)).body
        #expect(CompactFeedPage.read(huge, limit: CompactFeedPage.maxChanges) == nil)
        huge.append(contentsOf: [1, 0, 1, 0x41] + [UInt8](repeating: 0, count: 8) + [0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(CompactFeedPage.read(huge, limit: Int.max) == nil)

        var envelopeTooLong = Data("FSF1".utf8)
        envelopeTooLong.append(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(CompactFeedPage.read(envelopeTooLong, limit: 10) == nil)
    }

    @Test func aPageOfMoreChangesThanTheReadersLimitIsRefused() {
        #expect(CompactFeedPage.read(Self.sample(), limit: 2) == nil)
        #expect(CompactFeedPage.read(Self.sample(), limit: 3) != nil)
    }
}
