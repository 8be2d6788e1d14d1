import FormSyncModel
import Foundation

/// Where the server keeps who may call it (docs/PROTOCOL.md, "Devices and credentials"): token
/// digests and their grants, enrolled devices with their refresh-token generations, and
/// enrolment codes. Part of every `ServerStore`; calls that read and then write run inside
/// `exclusive` and `transaction`, and a device or enrolment read inside a transaction stays
/// locked until it ends (on PostgreSQL, on every node).
package protocol CredentialStore: AnyObject, Sendable {
    /// Stores a token's digest with its grant; `device` ties it to a device's generation.
    func addToken(_ token: String, kind: String, grant: SyncServer.Grant, expiresAt: Int64, device: (id: String, generation: Int64)?) throws
    /// The grant of a token of `kind`, valid or not, with its device's state; nil for a token
    /// the server never issued. Throws when the store cannot say (its database is down): the
    /// server answers 503, never a 401 that would send every device to refresh a token that is fine.
    func grant(ofToken token: String, kind: String) throws -> StoredGrant?
    func expireAccessTokens(at now: Int64)
    /// Ties a token issued before devices to `device`'s `generation`.
    func assignToken(_ token: String, kind: String, device: String, generation: Int64) throws
    /// Forgets the tokens issued without a device to `principal` that may name `workspace`.
    func removeDevicelessTokens(principal: String, workspace: String) throws
    /// Forgets the tokens of one generation of a device (a refresh answered again).
    func removeTokens(device: String, generation: Int64) throws
    /// Forgets a device's tokens that expired before `cutoff`.
    func removeTokens(device: String, expiredBefore cutoff: Int64) throws

    func addDevice(_ device: StoredDevice) throws
    /// One device; inside a transaction it stays locked until the transaction ends.
    func device(_ id: String) throws -> StoredDevice?
    /// Up to `limit` devices that may name `workspace` (of one principal, or all), oldest first.
    func devices(workspace: String, principal: String?, limit: Int) throws -> [StoredDevice]
    /// Writes a device's generations, report, last sighting and revocation.
    func updateDevice(_ device: StoredDevice) throws
    /// Records a sighting when the last one recorded is older than `staleBefore`.
    func touchDevice(_ id: String, at now: Int64, staleBefore: Int64) throws

    func addEnrolment(digest: Data, _ enrolment: StoredEnrolment) throws
    /// An enrolment by its code's digest; inside a transaction it stays locked until it ends.
    func enrolment(digest: Data) throws -> StoredEnrolment?
    /// Marks an enrolment used by `device`, from `installation`.
    func useEnrolment(digest: Data, device: String, installation: String?, at now: Int64) throws
}

/// A token as the store holds it: its grant, its expiry, and the device it belongs to.
package struct StoredGrant: Sendable {
    package var grant: SyncServer.Grant
    package var expiresAt: Int64
    /// The device and refresh generation it was issued to; nil for a token from before devices.
    package var device: String?
    package var generation: Int64?
    /// Whether its device is revoked.
    package var deviceRevoked: Bool
    /// When its device was last seen (nil without a device).
    package var deviceLastSeen: Int64?

    /// Tokens are stored only as their SHA-256: a stolen database holds no usable token.
    package static func digest(_ token: String) -> Data { SHA256.hash(Data(token.utf8)) }

    package init(
        grant: SyncServer.Grant, expiresAt: Int64, device: String? = nil, generation: Int64? = nil, deviceRevoked: Bool = false,
        deviceLastSeen: Int64? = nil
    ) {
        self.grant = grant
        self.expiresAt = expiresAt
        self.device = device
        self.generation = generation
        self.deviceRevoked = deviceRevoked
        self.deviceLastSeen = deviceLastSeen
    }
}

/// A device as the store holds it. Its refresh tokens are numbered by generation: `current` is
/// the one it holds now, `previous` the one that current replaced (still accepted once more,
/// for a device that never read the reply to its refresh); anything older, presented again,
/// means the token was copied, and revokes the device.
package struct StoredDevice: Sendable, Equatable {
    package var id: String
    package var grant: SyncServer.Grant
    package var name: String
    package var appVersion: String
    package var specVersion: String
    /// The installation id it enrolled from, if it sent one.
    package var installation: String?
    package var enrolledAt: Int64
    package var lastSeenAt: Int64
    package var currentGeneration: Int64
    package var previousGeneration: Int64?
    package var nextGeneration: Int64
    package var revokedAt: Int64?
    package var revokedReason: String?

    package init(
        id: String, grant: SyncServer.Grant, name: String, appVersion: String, specVersion: String, installation: String?,
        enrolledAt: Int64, lastSeenAt: Int64, currentGeneration: Int64, previousGeneration: Int64?, nextGeneration: Int64,
        revokedAt: Int64?, revokedReason: String?
    ) {
        self.id = id
        self.grant = grant
        self.name = name
        self.appVersion = appVersion
        self.specVersion = specVersion
        self.installation = installation
        self.enrolledAt = enrolledAt
        self.lastSeenAt = lastSeenAt
        self.currentGeneration = currentGeneration
        self.previousGeneration = previousGeneration
        self.nextGeneration = nextGeneration
        self.revokedAt = revokedAt
        self.revokedReason = revokedReason
    }
}

/// An enrolment code as the store holds it (by its digest only).
package struct StoredEnrolment: Sendable, Equatable {
    package var grant: SyncServer.Grant
    package var createdAt: Int64
    package var expiresAt: Int64
    /// The back office principal that made it.
    package var createdBy: String
    package var device: String?
    package var installation: String?
    package var usedAt: Int64?

    package init(
        grant: SyncServer.Grant, createdAt: Int64, expiresAt: Int64, createdBy: String, device: String? = nil, installation: String? = nil,
        usedAt: Int64? = nil
    ) {
        self.grant = grant
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.createdBy = createdBy
        self.device = device
        self.installation = installation
        self.usedAt = usedAt
    }
}
