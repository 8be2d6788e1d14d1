import FieldForms
import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncModel

/// `FormRegistry.Entry.admit`, which the reference server runs on every submission, decodes a
/// payload once; it must answer exactly what validating, listing placeholders and remapping
/// (three decodings, and what an interpreted form still does) answer.
struct FormAdmissionTests {
    enum Kind: Hashable { case invalid, placeholders, admitted }

    static func kind(_ admission: FormRegistry.Entry.Admission) -> Kind {
        switch admission {
        case .invalid: .invalid
        case .holdsPlaceholders: .placeholders
        case .admitted: .admitted
        }
    }

    /// The same entry without its one-decoding path: `admit` composes the three closures.
    static func composed(_ entry: FormRegistry.Entry) -> FormRegistry.Entry {
        FormRegistry.Entry(
            name: entry.name, version: entry.version, recordAction: entry.recordAction, upgrades: entry.upgrades,
            decodeAndValidate: entry.decodeAndValidate, placeholders: entry.placeholders, remap: entry.remap, merge: entry.merge)
    }

    static func agree(_ entry: FormRegistry.Entry, _ json: Data) throws -> Kind {
        let once = try entry.admit(json)
        let thrice = try composed(entry).admit(json)
        switch (once, thrice) {
        case (.invalid(let a), .invalid(let b)):
            #expect(a == b, "\(entry.name): \(String(decoding: json, as: UTF8.self))")
        case (.holdsPlaceholders(let a), .holdsPlaceholders(let b)):
            #expect(a == b)
        case (.admitted(let a, let p), .admitted(let b, let q)):
            #expect(a == b && p == q, "\(entry.name): \(String(decoding: json, as: UTF8.self))")
        default:
            Issue.record("\(entry.name): one decoding says \(once), three say \(thrice) for \(String(decoding: json, as: UTF8.self))")
        }
        return kind(once)
    }

    @Test func oneDecodingAnswersAsValidatePlaceholdersAndRemapDo() async throws {
        try await OffThePool.compute {
            let registry = FormRegistry(FormCatalog.forms)
            var seen: [Kind: Int] = [:]
            for form in FormCatalog.forms {
                let entry = try #require(registry[form.formName])
                for seed in 0..<150 as Range<UInt64> {
                    let value = try form.init(from: RandomDecoder(source: RandomValues(seed: seed), depth: 0))
                    seen[try Self.agree(entry, try FormRegistry.encode(value)), default: 0] += 1
                }
                for broken in ["", "{", "[]", "null", "{\"lines\":5}", "{\"customer_id\":\"x\"}", "{\"name\":1e999}"] {
                    #expect(try Self.agree(entry, Data(broken.utf8)) == .invalid)
                }
            }
            let salesOrders = try #require(registry["SalesOrder"])
            let order = SalesOrder(
                customerId: EntityRef(42), orderDate: LocalDate("2026-11-30"), paymentTermsDays: 30,
                lines: [.init(sku: "SKU-1001", quantity: 2, unitPrice: Money(minorUnits: 1999, currency: "EUR"))])
            seen[try Self.agree(salesOrders, try FormRegistry.encode(order)), default: 0] += 1
            var offline = order
            offline.customerId = EntityRef(-7)
            seen[try Self.agree(salesOrders, try FormRegistry.encode(offline)), default: 0] += 1
            for kind in [Kind.invalid, .placeholders, .admitted] {
                #expect((seen[kind] ?? 0) > 0, "no payload was \(kind): \(seen)")
            }
        }
    }
}
