import FieldForms
import FormSyncModel
import FormSyncTesting
import Foundation

/// What the crash harness's device captures, as a function of the capture's index and the
/// seed alone: a device restarted after a kill captures exactly what it would have, under the
/// same document identity and placeholders, so a capture that committed but was never logged
/// is found again (once means once) instead of being made twice.
package struct TorturePlan: Sendable {
    /// What capture `index` is.
    package enum Capture: Equatable, Sendable {
        /// A new customer with a shop-front photo, created offline under a placeholder.
        case customer
        /// An order for the customer captured at index `customerIndex` (offline, by placeholder).
        case orderForNewCustomer(customerIndex: Int)
        /// An order for a customer the server already had.
        case orderForKnownCustomer(slot: Int)
        /// An edit of a delivery the device pulled.
        case deliveryEdit
        /// A site inspection whose findings list makes two Finding records.
        case inspection
        /// The removal of seeded finding number `finding` (the back office made them).
        case findingRemoval(finding: Int)
    }

    /// How many findings the back office seeds, for removals to remove.
    package static let seededFindings = 400

    package let seed: UInt64
    /// The placeholders start here, far from any the outbox mints from the clock (ms × 1000).
    static let placeholderBase: Int64 = 3_000_000_000_000_000

    package init(seed: UInt64) {
        self.seed = seed
    }

    package func capture(_ index: Int) -> Capture {
        switch index % 6 {
        case 0: return .customer
        case 5 where index % 12 == 5: return .inspection
        case 5 where index % 24 == 11: return .findingRemoval(finding: index / 24)
        case 1, 2, 5: return .orderForNewCustomer(customerIndex: index - index % 6)
        case 3: return .orderForKnownCustomer(slot: Int((UInt64(index) &* 2_654_435_761 ^ seed) % 1000))
        default: return .deliveryEdit
        }
    }

    /// Who captures capture `index` on a shared phone: the partner takes some of the orders for
    /// customers the server already had (so that nothing of the courier's ever waits on the
    /// partner's work), the courier the rest.
    package func person(_ index: Int) -> String {
        if case .orderForKnownCustomer = capture(index), (UInt64(index) &* 0x9E37_79B9 ^ seed) % 3 != 0 { return TortureDevice.partner }
        return TortureDevice.courier
    }

    package func documentID(_ index: Int) -> String { "t\(seed)-\(index)" }
    package func customerPlaceholder(_ index: Int) -> Int64 { -(Self.placeholderBase + Int64(index) * 2) }
    package func photoPlaceholder(_ index: Int) -> Int64 { -(Self.placeholderBase + Int64(index) * 2 + 1) }
    package func marker(_ index: Int) -> String { "t\(index)" }
    package func recipient(_ index: Int) -> String { "r\(index)" }

    /// The photo of customer capture `index`: every other one is large enough to go up as a
    /// resumable upload in several chunks (the device's threshold is 128 KiB).
    package func photo(_ index: Int) -> Data {
        let count = index % 12 == 0 ? 300_000 : 8_000 + (index * 37) % 4_000
        var random = SplitMix64(state: seed &+ UInt64(index) &* 0x9E37_79B9)
        var bytes = [UInt8](repeating: 0, count: count)
        var n = 0
        while n < count {
            var word = random.next()
            for _ in 0..<8 where n < count {
                bytes[n] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                n += 1
            }
        }
        return MediaSignature.stamped(Data(bytes), asFileNamed: "photo.jpg")
    }

    package func customer(_ index: Int) -> NewCustomer {
        NewCustomer(
            name: "Torture shop \(index)", segment: .retail, shopFront: FileRef(id: photoPlaceholder(index), contentType: "image/jpeg"))
    }

    /// The titles of the findings inspection `index` makes.
    package func findingTitles(_ index: Int) -> [String] { ["t\(index)-f0", "t\(index)-f1"] }

    package func inspection(_ index: Int) -> SiteInspection {
        SiteInspection(
            siteCode: String(format: "TRT-%04d", index % 10_000), inspectorId: EntityRef(1), visitDate: LocalDate("2026-11-30"),
            passed: true, location: GeoPoint(latitude: 38.7, longitude: -9.1), hazards: [.height],
            findings: findingTitles(index).map { SiteInspection.Finding(title: $0, severity: .low) })
    }

    package func order(_ index: Int, customer: Int64) -> SalesOrder {
        SalesOrder(
            customerId: EntityRef(customer), orderDate: LocalDate("2026-11-30"), customerReference: marker(index),
            lines: (0..<(1 + index % 4)).map { n in
                .init(sku: "SKU-\(1000 + n)", quantity: n % 7 + 1, unitPrice: Money(minorUnits: Int64(100 + n), currency: "EUR"))
            })
    }
}
