import Testing

@_spi(Generated) @testable import FormSyncModel

struct ThreeWayMergeTests {
    func merge(_ base: String, _ local: String, _ server: String, _ policy: ConflictPolicy) -> (String, Bool) {
        var m = ThreeWayMerge()
        let value = m.field("#/f", base: base, local: local, server: server, policy: policy)
        return (value, !m.conflicts.isEmpty)
    }

    @Test func mergeTakesWhicheverSideChangedAndFlagsOnlyAClash() {
        #expect(merge("a", "b", "a", .merge) == ("b", false))
        #expect(merge("a", "a", "c", .merge) == ("c", false))
        #expect(merge("a", "d", "d", .merge) == ("d", false))
        #expect(merge("a", "b", "c", .merge) == ("c", true))
    }

    @Test func clientAndServerPoliciesSettleAClashWithoutAPerson() {
        #expect(merge("a", "b", "c", .client) == ("b", false))
        #expect(merge("a", "a", "c", .client) == ("c", false))
        #expect(merge("a", "b", "c", .server) == ("c", false))
        #expect(merge("a", "b", "a", .server) == ("b", false))
    }

    @Test func askRaisesAConflictForAnyServerChangeTheDeviceDoesNotMatch() {
        #expect(merge("a", "a", "c", .ask) == ("c", true))
        #expect(merge("a", "b", "a", .ask) == ("b", false))
        #expect(merge("a", "c", "c", .ask) == ("c", false))
    }

    @Test func serverAuthorityKeepsTheServersValueAndReportsADifferingLocalEdit() {
        var m = ThreeWayMerge()
        #expect(m.serverAuthority("#/cod", base: 100, local: 100, server: 120) == 120)
        #expect(m.conflicts.isEmpty)
        #expect(m.serverAuthority("#/cod", base: 100, local: 150, server: 120) == 120)
        #expect(m.conflicts.map(\.pointer) == ["#/cod"])
        #expect(m.serverAuthority("#/cod", base: 100, local: 120, server: 120) == 120)
        #expect(m.conflicts.count == 1)
    }
}
