/// How two edits of one field are reconciled when the server's record moved on since the base
/// the device edited. The spec's `conflict:` key names one per field.
public enum ConflictPolicy: String, Codable, Sendable, CaseIterable {
    /// Take whichever side changed; both changed to different values is a conflict.
    case merge
    /// Take whichever side changed; when both did, the device's edit wins.
    case client
    /// Take whichever side changed; when both did, the server's value wins.
    case server
    /// Like `merge`, and any server change the device's value does not already match needs a
    /// person, even when the device did not touch the field.
    case ask
}

/// A field the merge could not settle on its own.
public struct FieldConflict: Codable, Sendable, Hashable, CustomStringConvertible {
    /// A JSON Pointer to the field.
    public var pointer: String
    /// Why it needs a person.
    public var reason: String

    public init(pointer: String, reason: String) {
        self.pointer = pointer
        self.reason = reason
    }

    public var description: String { "\(pointer): \(reason)" }
}

/// The result of a three-way merge: the merged payload (holding the server's value wherever
/// there is a conflict) and the conflicts that need a person. Clean means it can be sent.
public struct MergeResult<Payload: Sendable>: Sendable {
    public var merged: Payload
    public var conflicts: [FieldConflict]

    public init(merged: Payload, conflicts: [FieldConflict]) {
        self.merged = merged
        self.conflicts = conflicts
    }

    /// Whether the merged payload can be sent without a person deciding anything.
    public var isClean: Bool { conflicts.isEmpty }
}

extension MergeResult: Equatable where Payload: Equatable {}

/// Field-by-field three-way merge. Generated `merge(base:local:server:)` methods call `field`
/// or `serverAuthority` once per field and collect the conflicts here.
@_spi(Generated) public struct ThreeWayMerge: Sendable {
    public private(set) var conflicts: [FieldConflict] = []

    public init() {}

    /// Merges one field under `policy`.
    public mutating func field<T: Equatable>(_ pointer: String, base: T, local: T, server: T, policy: ConflictPolicy) -> T {
        if local == server { return local }
        let localChanged = local != base
        let serverChanged = server != base
        if policy == .ask && serverChanged {
            conflicts.append(FieldConflict(pointer: pointer, reason: "The server changed this field; choose which value to keep."))
            return server
        }
        if !serverChanged { return local }
        if !localChanged { return server }
        switch policy {
        case .client:
            return local
        case .server:
            return server
        case .merge, .ask:
            conflicts.append(FieldConflict(pointer: pointer, reason: "Changed here and on the server to different values."))
            return server
        }
    }

    /// A field the server owns (money with `authority: server`): the server's value always
    /// stands, and a local edit that differed from it is reported, never silently dropped.
    public mutating func serverAuthority<T: Equatable>(_ pointer: String, base: T, local: T, server: T) -> T {
        if local != base && local != server {
            conflicts.append(FieldConflict(pointer: pointer, reason: "The server owns this amount; the local edit differs from it."))
        }
        return server
    }
}
