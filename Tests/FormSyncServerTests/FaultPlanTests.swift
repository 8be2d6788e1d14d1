import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncServer

/// The faults `formsync serve --fault` scripts, parsed and bounded.
struct FaultPlanTests {
    @Test func anOutageIsParsedWithItsStartAndRefusedWhenAbsurd() {
        #expect(FaultPlan.parseOutage("outage=30")! == (30, 0))
        #expect(FaultPlan.parseOutage("outage=30@5")! == (30, 5))
        for bad in [
            "outage", "outage=", "outage=0", "outage=-4", "outage=86401", "outage=30@", "outage=30@-1", "outage=30@x",
            "outage=9999999999999999999999",
        ] {
            #expect(FaultPlan.parseOutage(bad) == nil, "\(bad)")
        }
    }

    @Test func anOutageStartingLaterIsNotInProgressYetAndOneNowIs() {
        let later = FaultPlan()
        later.outage(seconds: 60, after: 3600)
        #expect(!later.isOutage)
        let now = FaultPlan()
        now.outage(seconds: 60)
        #expect(now.isOutage)
        let over = FaultPlan()
        over.outage(seconds: 0)
        #expect(!over.isOutage)
    }
}

/// A held request waits for its release; a test waits for the hold, not for a guess of time.
struct FaultPlanHoldTests {
    @Test func aHeldRequestWaitsForItsReleaseAndIsSeenHeld() async {
        await OffThePool.run {
            let faults = FaultPlan()
            #expect(!faults.waitUntilHolding(1, seconds: 0.05))
            let finished = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                faults.holding { faults.waitForRelease() }
                finished.signal()
            }
            #expect(faults.waitUntilHolding(1))
            #expect(finished.wait(timeout: .now() + 0.05) == .timedOut)
            faults.releaseHeld()
            finished.wait()
            #expect(!faults.waitUntilHolding(1, seconds: 0.01))
        }
    }
}
