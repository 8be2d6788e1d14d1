import FormSyncClient

/// The seeded random source, for tests that import only this module (it lives in
/// `FormSyncClient`, where the demo and apps' own simulations find it too).
public typealias SplitMix64 = FormSyncClient.SplitMix64
