import FieldForms
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

/// The generated `init(json:)` against `JSONDecoder`: whatever the reader takes it must read as
/// the decoder does (the server stores, and the outbox merges and remaps, what it read), and
/// whatever the decoder refuses it must decline, so that the decoder's exact error is what the
/// sender sees. Random payloads as in `JSONWriterEquivalenceTests`, then mutated bytes.
struct JSONReaderEquivalenceTests {
    typealias Payload = Codable & JSONWritable & JSONReadable

    static var types: [any Payload.Type] {
        (FormCatalog.forms as [Any.Type] + FormCatalog.records as [Any.Type]).compactMap { $0 as? any Payload.Type }
    }

    /// The reader's value, the decoder's, and whether they agree (compared by their written
    /// bytes, which are exact for every field, a `-0.0` included).
    static func compare<T: Payload>(_ type: T.Type, _ bytes: Data) -> (read: Bool, decoded: Bool, agree: Bool) {
        let read = JSONInput.value(T.self, from: bytes)
        let decoded = try? JSONDecoder().decode(T.self, from: bytes)
        guard let read else { return (false, decoded != nil, true) }
        guard let decoded else { return (true, false, false) }
        return (true, true, (try? FormRegistry.encode(read)) == (try? FormRegistry.encode(decoded)))
    }

    @Test func everyGeneratedTypeReadsWhatItWroteAsTheDecoderDoes() async throws {
        try await OffThePool.compute {
            #expect(Self.types.count == FormCatalog.forms.count + FormCatalog.records.count, "every form and record is JSONReadable")
            for type in Self.types {
                var readCount = 0
                for seed in UInt64(0)..<400 {
                    let bytes = try Self.randomBytes(type, seed: seed, plain: seed % 2 == 0)
                    let outcome = Self.compare(type, bytes)
                    #expect(outcome.agree, "\(type), seed \(seed): \(String(decoding: bytes, as: UTF8.self))")
                    #expect(outcome.decoded)
                    if outcome.read { readCount += 1 }
                }
                // Escaped strings, long numbers and decimals are left to the decoder; plain payloads
                // without a decimal are read.
                #expect(readCount >= 20, "\(type): the reader took \(readCount) of 400 payloads")
            }
        }
    }

    static func randomBytes<T: Payload>(_ type: T.Type, seed: UInt64, plain: Bool) throws -> Data {
        let source = RandomValues(seed: seed)
        source.plain = plain
        return try FormRegistry.encode(try T(from: RandomDecoder(source: source, depth: 0)))
    }

    @Test func plainPayloadsAreReadWithoutTheDecoder() throws {
        let order = SalesOrder(
            customerId: EntityRef(42), orderDate: LocalDate("2026-11-30"), paymentTermsDays: 30, customerReference: "PO 7/12",
            lines: (1...10).map {
                .init(sku: "AB-\(1000 + $0)", quantity: $0, unitPrice: Money(minorUnits: 999, currency: "EUR"), note: "Größe M")
            },
            signedByCustomer: FileRef(id: -3, byteCount: 1200, contentType: "image/png"))
        let bytes = try FormRegistry.encode(order)
        #expect(JSONInput.value(SalesOrder.self, from: bytes) == order)
        let inspection = SiteInspection(location: GeoPoint(latitude: 48.137154, longitude: -11.5e-3, accuracy: 4))
        #expect(JSONInput.value(SiteInspection.self, from: try FormRegistry.encode(inspection)) == inspection)
        let spaced = Data(#" { "customer_id" : 7 , "lines" : [ ] , "order_date" : null } "#.utf8)
        #expect(JSONInput.value(SalesOrder.self, from: spaced) == SalesOrder(customerId: EntityRef(7)))
    }

    @Test func whatTheReaderDoesNotTakeIsLeftToTheDecoder() throws {
        let declined = [
            #"{"customer_id": 7, "customer_id": 8}"#,  // a member twice
            #"{"customer_id": 7, "extra": 1}"#,  // a member it does not know
            #"{"customer_reference": "a\"b"}"#,  // an escape
            #"{"customer_id": 7.0}"#, #"{"customer_id": 1e2}"#, #"{"customer_id": -0}"#, #"{"customer_id": 012}"#,
            #"{"customer_id": 1234567890123456789}"#,  // past 18 digits
            #"{"discount_percent": 2.5}"#,  // a decimal
            #"{"customer_id": 7} x"#, #"{"customer_id": 7"#, #"{"customer_id": 7,}"#, #"[]"#, "",
            #"{"order_date": "2026-02-30"}"#, #"{"lines": [{"unit_price": {"currency": "EUR"}}]}"#,
        ]
        for text in declined {
            #expect(JSONInput.value(SalesOrder.self, from: Data(text.utf8)) == nil, "\(text)")
        }
        // Declined, yet the decoder reads some of them: the registry still accepts those.
        let entry = try #require(FormRegistry([SalesOrder.self])["SalesOrder"])
        #expect(entry.validate(Data(#"{"customer_id": 7.0, "discount_percent": 2.5}"#.utf8)).allSatisfy { $0.code != "invalid" })
    }

    @Test func aStringOfInvalidUTF8IsDeclinedAndOneBeyondASCIIIsRead() throws {
        func order(_ reference: [UInt8]) -> Data {
            Data(#"{"customer_id": 7, "customer_reference": ""#.utf8) + reference + Data(#""}"#.utf8)
        }
        for invalid: [UInt8] in [[0x41, 0xFF, 0x42], [0x41, 0xC3], [0xED, 0xA0, 0x80], [0xC0, 0xAF]] {
            #expect(JSONInput.value(SalesOrder.self, from: order(invalid)) == nil, "\(invalid)")
            #expect(Self.compare(SalesOrder.self, order(invalid)).agree)
        }
        #expect(JSONInput.value(SalesOrder.self, from: order(Array("PO Größe 7/12".utf8)))?.customerReference == "PO Größe 7/12")
        #expect(JSONInput.value(SalesOrder.self, from: order(Array("PO 7/12".utf8)))?.customerReference == "PO 7/12")
    }

    @Test func numbersAtTheEdgesOfDoubleAreReadAsTheDecoderReadsThem() throws {
        let numbers = [
            "0", "-0", "-0.0", "1e308", "1.7976931348623157e308", "1e309", "-1e-400", "4.9e-324", "2.4703282292062328e-324",
            "2.2250738585072014e-308", "123456789012345678901234567890", "0.1", "1E+2", "1e-2", "9007199254740993", "-12.5e0",
        ]
        for number in numbers {
            let bytes = Data(#"{"location": {"latitude": \#(number), "longitude": 1}}"#.utf8)
            let outcome = Self.compare(SiteInspection.self, bytes)
            #expect(outcome.agree, "\(number): read \(outcome.read), decoded \(outcome.decoded)")
        }
    }

    @Test func mutatedPayloadsAreReadAsTheDecoderReadsThemOrDeclined() async throws {
        try await OffThePool.compute {
            var random = SplitMix64(state: 2026)
            let replacements: [[UInt8]] = [
                "0", "-1", "1.5", "1e308", "1e309", "-1e-400", "2.2250738585072014e-308", "4.9e-324", "00", "-", "1.", ".5", "true",
                "false", "null", "nul", "\"\"", "\"x", "{", "}", "[", "]", ",", ":", " ", "\\", "\u{7F}", "é", "\u{1}",
            ].map { Array($0.utf8) }
            var read = 0
            var declined = 0
            for type in Self.types {
                for seed in UInt64(0)..<150 {
                    var bytes = Array(try Self.randomBytes(type, seed: seed, plain: true))
                    for _ in 0...Int(random.next() % 3) {
                        let at = Int(random.next() % UInt64(bytes.count + 1))
                        let end = min(bytes.count, at + Int(random.next() % 4))
                        switch random.next() % 3 {
                        case 0: bytes.replaceSubrange(at..<end, with: replacements[Int(random.next() % UInt64(replacements.count))])
                        case 1: bytes.removeSubrange(at..<end)
                        default: bytes.insert(contentsOf: replacements[Int(random.next() % UInt64(replacements.count))], at: at)
                        }
                    }
                    let outcome = Self.compare(type, Data(bytes))
                    #expect(
                        outcome.agree,
                        "\(type), seed \(seed): read \(outcome.read), decoded \(outcome.decoded): \(String(decoding: bytes, as: UTF8.self))"
                    )
                    if outcome.read { read += 1 } else { declined += 1 }
                }
            }
            #expect(read > 100 && declined > 100, "both sides exercised: \(read) read, \(declined) declined")
        }
    }
}
