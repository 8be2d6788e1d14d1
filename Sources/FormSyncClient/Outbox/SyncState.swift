import FormSyncModel

/// Where an item stands, as a person should see it.
public enum SyncState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Stored durably on this device, not sent yet (or waiting to retry).
    case savedOnDevice = "saved_on_device"
    /// Stored durably and due, but no server answers (no network, a captive portal): it goes
    /// out when the server is reachable again. Never counted against the item.
    case waitingForNetwork = "waiting_for_network"
    /// A file larger than the network's cost allows (`NetworkCost`): it goes on an unmetered
    /// network, or at once after `Outbox.sendOnAnyNetwork` ("waiting for Wi-Fi").
    case waitingForUnmeteredNetwork = "waiting_for_unmetered_network"
    /// Captured on a shared phone by a person who is not signed in now: it goes out only under
    /// their credential, when they sign in again, or after a person hands it over
    /// (`Outbox.handOver`).
    case waitingForItsOwner = "waiting_for_its_owner"
    /// Leased for sending: its files or dependencies are going out, or it is about to go.
    case sending
    /// The request is out; no reply yet.
    case sent
    /// The server acknowledged it.
    case confirmed
    /// The server refused it; it waits for a fix, a retry or a discard.
    case rejected
    /// The server's record changed and the merge needs a person.
    case conflict
    /// It ran out of attempts.
    case exhausted
    /// Something it depends on needs attention, so it is held back.
    case blocked
    /// Kept on this device for support: the server revoked the device's credentials before it
    /// went out. It is never sent again under any credential; `outbox inspect` and the item
    /// lists show it, with its payload and files, for a person to recover.
    case sealed

    /// Rejected, conflict, exhausted or blocked: a person has to act.
    public var needsAttention: Bool {
        switch self {
        case .rejected, .conflict, .exhausted, .blocked: return true
        default: return false
        }
    }
}
