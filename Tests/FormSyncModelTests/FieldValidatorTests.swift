import Foundation
import Testing

@_spi(Generated) @testable import FormSyncModel

struct FieldValidatorTests {
    @Test func requiredTreatsNilEmptyAndBlankAsMissing() {
        var v = FieldValidator()
        v.require(nil as String?, at: "#/a")
        v.require("  " as String?, at: "#/b")
        v.require("x" as String?, at: "#/c")
        v.require([Int](), at: "#/d")
        v.require(nil as Int?, at: "#/e")
        v.require(0 as Int?, at: "#/f")
        #expect(v.errors.map(\.pointer) == ["#/a", "#/b", "#/d", "#/e"])
        #expect(v.errors.allSatisfy { $0.code == "required" })
    }

    @Test func patternMustMatchTheWholeValue() {
        var v = FieldValidator()
        v.pattern("LIS-0042", "[A-Z]{3}-[0-9]{4}", at: "#/ok")
        v.pattern("xLIS-0042", "[A-Z]{3}-[0-9]{4}", at: "#/prefix")
        v.pattern("LIS-00421", "[A-Z]{3}-[0-9]{4}", at: "#/suffix")
        #expect(v.errors.map(\.pointer) == ["#/prefix", "#/suffix"])
    }

    @Test func lengthsCountUnicodeScalarsAsJSONSchemaDoes() {
        var v = FieldValidator()
        v.length("ação", min: nil, max: 4, at: "#/ok")
        v.length("açãoo", min: nil, max: 4, at: "#/long")
        v.length("a", min: 2, max: nil, at: "#/short")
        #expect(v.errors.map(\.code) == ["max_length", "min_length"])
        // Around the byte-count shortcut: more bytes than the maximum, yet few enough scalars;
        // enough bytes for the minimum, yet too few scalars; four-byte scalars at both bounds.
        var u = FieldValidator()
        u.length("😀😀", min: 2, max: 2, at: "#/two-emoji")
        u.length("😀😀😀", min: nil, max: 2, at: "#/three-emoji")
        u.length("ãã", min: 3, max: nil, at: "#/two-of-three")
        u.length("ããã", min: 3, max: 3, at: "#/three")
        u.length("", min: 1, max: nil, at: "#/empty")
        #expect(u.errors.map(\.pointer) == ["#/three-emoji", "#/two-of-three", "#/empty"])
    }

    @Test func rangesCountsAndMoney() {
        var v = FieldValidator()
        v.range(0 as Int?, min: 1, max: 10, at: "#/q")
        v.range(Decimal(string: "30.01") as Decimal?, min: Decimal(0), max: Decimal(string: "30"), at: "#/d")
        v.count(5, min: 1, max: 4, at: "#/photos")
        v.money(Money(minorUnits: -1, currency: "EUR"), min: 0, max: nil, currency: "EUR", at: "#/m1")
        v.money(Money(minorUnits: 5, currency: "USD"), min: 0, max: nil, currency: "EUR", at: "#/m2")
        v.money(Money(minorUnits: 5, currency: "eur"), min: nil, max: nil, currency: nil, at: "#/m3")
        #expect(
            v.errors.map { "\($0.pointer) \($0.code)" } == [
                "#/q min", "#/d max", "#/photos max_count", "#/m1 min", "#/m2 currency", "#/m3 currency",
            ])
    }

    @Test func filesAreCheckedForSizeAndMediaTypeWithWildcards() {
        var v = FieldValidator()
        v.file(FileRef(id: -1, byteCount: 100, contentType: "image/jpeg"), maxBytes: 100, contentTypes: ["image/*"], at: "#/ok")
        v.file(FileRef(id: -1, byteCount: 101, contentType: "image/jpeg"), maxBytes: 100, contentTypes: [], at: "#/big")
        v.file(FileRef(id: -1, contentType: "video/mp4"), maxBytes: nil, contentTypes: ["image/*", "application/pdf"], at: "#/type")
        #expect(v.errors.map { "\($0.pointer) \($0.code)" } == ["#/big max_bytes", "#/type content_type"])
    }

    @Test func geopointsOutsideTheEarthAreRefusedPerCoordinate() {
        var v = FieldValidator()
        v.geopoint(GeoPoint(latitude: 91, longitude: 0), at: "#/p")
        v.geopoint(GeoPoint(latitude: 0, longitude: .nan, accuracy: -1), at: "#/q")
        #expect(v.errors.map(\.pointer) == ["#/p/latitude", "#/q/longitude", "#/q/accuracy"])
    }
}
