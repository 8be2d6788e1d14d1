import Foundation
import Testing

@testable import FormSpec

/// Spec evolution: every rule of `diff` on a corpus of before/after pairs, the lock of released
/// shapes, and the upgraders' own checks.
struct SpecEvolutionTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("EvolutionPairs")

    static func pairNames() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// What `formsync diff before after` reports for a pair, as `File.yaml:line:column: severity: message`.
    static func diff(_ name: String) -> [String] {
        let pair = folder.appendingPathComponent(name)
        let old = SpecLoader.check(filesAt: SpecLoader.specFiles(in: [pair.appendingPathComponent("before").path]))
        let new = SpecLoader.check(filesAt: SpecLoader.specFiles(in: [pair.appendingPathComponent("after").path]))
        return SpecDiff.compare(old: old, new: new, oldName: "before").map { d in
            "\((d.path as NSString).lastPathComponent):\(d.location.line):\(d.location.column): \(d.severity.rawValue): \(d.message)"
        }
    }

    @Test func theCorpusCoversEveryRule() {
        let names = Self.pairNames()
        #expect(names.count >= 20)
        let all = names.flatMap { Self.diff($0) }.joined(separator: "\n")
        for phrase in [
            "compatible: optional field", "required field 'visited_on' was added", "filled by the upgrade's default",
            "was removed (or renamed)",
            "covered by the upgrade", "its type changed", "max_length changed from 200 to 100: queued values that break it are parked",
            "compatible: field 'note': max_length changed from 200 to 500", "option 'cancelled' added", "option 'partial' removed",
            "became required",
            "authority changed", "conflict policy changed", "bump version to 2", "versions only go up", "'lines.qty' was removed",
            "pattern changed from none", "was removed: items queued under it", "now refers to Depot",
            "constraint 'departure > arrival' added: queued values that break it are parked",
            "constraint changed from 'quantity <= 10' to 'quantity <= 5'",
            "compatible: field 'quantity': constraint 'quantity <= 10' removed",
            "field 'total': calculate changed from", "relevant 'quantity > 0' added", "its items now create records (Defect+site)",
        ] {
            #expect(all.contains(phrase), "no pair shows: \(phrase)")
        }
    }

    @Test(arguments: pairNames())
    func eachPairReportsExactlyItsExpectedDiagnostics(_ name: String) throws {
        let expected = try String(contentsOf: Self.folder.appendingPathComponent(name).appendingPathComponent("expected"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
        #expect(Self.diff(name) == expected)
    }

    @Test func documentationOnlyChangesChangeNoShape() throws {
        #expect(Self.diff("18-documentation-only").isEmpty)
    }

    @Test func theLockRecordsNewVersionsAndRefusesAReleasedShapeEditedInPlace() throws {
        let v1 = SpecLoader.check(text: "form: Visit\nversion: 1\nendpoint: /v\nfields:\n  a: text\n", path: "Visit.yaml")
        let (lock, problems) = SpecLock().updated(with: [("Visit.yaml", v1)])
        #expect(problems.isEmpty)
        #expect(lock.versions(of: "Visit").map(\.version) == [1])
        // Round trip through the file format.
        let reread = try JSONDecoder().decode(SpecLock.self, from: Data(lock.rendered().utf8))
        #expect(reread == lock)

        let edited = SpecLoader.check(
            text: "form: Visit\nversion: 1\nendpoint: /v\nfields:\n  a: { type: text, required: true }\n", path: "Visit.yaml")
        let (_, inPlace) = lock.updated(with: [("Visit.yaml", edited)])
        #expect(
            inPlace.map(\.diagnostic.description) == [
                "Visit.yaml:2:10: error: the shape of form Visit changed but its version is still 1, released in formspecs.lock: field 'a': became required: queued items may lack it; bump version to 2"
            ])
        let bumped = SpecLoader.check(
            text: "form: Visit\nversion: 2\nendpoint: /v\nfields:\n  a: { type: text, required: true }\n", path: "Visit.yaml")
        let (next, none) = lock.updated(with: [("Visit.yaml", bumped)])
        #expect(none.isEmpty)
        #expect(next.versions(of: "Visit").map(\.version) == [1, 2])
    }

    @Test func everyStepOfTheChainIsCheckedAgainstItsUpgrader() throws {
        // Released: v1 with `fax`, v2 without it (dropped by the step from 1). A v3 whose spec
        // lost that old step is refused: items of version 1 could still be queued.
        var lock = SpecLock()
        let v1 = SpecLoader.check(text: "form: Visit\nversion: 1\nendpoint: /v\nfields:\n  a: text\n  fax: text\n", path: "Visit.yaml")
        let v2 = SpecLoader.check(
            text: "form: Visit\nversion: 2\nendpoint: /v\nupgrades:\n  1: { drop: [fax] }\nfields:\n  a: text\n", path: "Visit.yaml")
        lock = lock.updated(with: [("Visit.yaml", v1)]).lock
        lock = lock.updated(with: [("Visit.yaml", v2)]).lock
        let kept = SpecLoader.check(
            text: "form: Visit\nversion: 3\nendpoint: /v\nupgrades:\n  1: { drop: [fax] }\nfields:\n  a: text\n  b: text\n",
            path: "Visit.yaml")
        #expect(SpecDiff.check(kept, path: "Visit.yaml", lock: lock).filter { $0.severity == .error }.isEmpty)
        let lost = SpecLoader.check(text: "form: Visit\nversion: 3\nendpoint: /v\nfields:\n  a: text\n  b: text\n", path: "Visit.yaml")
        #expect(
            SpecDiff.check(lost, path: "Visit.yaml", lock: lock).filter { $0.severity == .error }.map(\.message) == [
                "version 1 → 2: field 'fax' was removed (or renamed): queued items still hold it; say what becomes of it: upgrades: { 1: { rename: { fax: new_name } } } or { drop: [fax] }"
            ])
    }

    @Test func upgradersAreCheckedAgainstTheSpecTheyBelongTo() throws {
        let spec = SpecLoader.check(
            text: """
                form: Visit
                version: 2
                endpoint: /v
                upgrades:
                  2: { drop: [x] }
                  1:
                    rename: { a: b, ghost: nowhere }
                    map: { outcome: { partial: maybe }, a: { x: y } }
                    default: { outcome: later, when: 2026-13, b: 3 }
                fields:
                  a: text
                  b: text
                  outcome: { type: choice, options: [done, missed] }
                  when: date
                """, path: "Visit.yaml")
        #expect(
            spec.diagnostics.map(\.description) == [
                "Visit.yaml:5:3: error: upgrades: 2 must be an older version than this spec's version 2",
                "Visit.yaml:7:15: error: rename: 'a' is still a field of this version; rename an old field that is gone",
                "Visit.yaml:7:28: error: rename: 'nowhere' is not a field of this version",
                "Visit.yaml:8:32: error: map: 'maybe' is not an option of 'outcome' (expected one of: done, missed)",
                "Visit.yaml:8:41: error: map: 'a' is not a choice or multi_choice field of this version",
                "Visit.yaml:9:25: error: default: 'later' is not an option of 'outcome' (expected one of: done, missed)",
                "Visit.yaml:9:38: error: default: '2026-13' is not a date such as 2026-11-30",
            ])
    }
}
