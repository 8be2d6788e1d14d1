import Foundation

/// The data-protection class of an outbox's files on iOS, iPadOS, tvOS, watchOS and visionOS:
/// the database, its log and shared memory, and the stash of attachments. The default,
/// `completeUntilFirstUserAuthentication`, keeps them encrypted from boot until the first
/// unlock and readable after it, so that the sync engine can run in the background with the
/// device locked; `complete` would stop it at every lock. macOS and Linux have no such classes:
/// there the option is accepted and has no effect.
public enum FileProtection: String, Sendable, CaseIterable {
    case none
    case complete
    case completeUnlessOpen
    case completeUntilFirstUserAuthentication

    /// Gives `paths` that exist this class (a folder's class is inherited by the files created
    /// in it afterwards).
    func apply(to paths: [String]) throws {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            let type: FileProtectionType
            switch self {
            case .none: type = .none
            case .complete: type = .complete
            case .completeUnlessOpen: type = .completeUnlessOpen
            case .completeUntilFirstUserAuthentication: type = .completeUntilFirstUserAuthentication
            }
            for path in paths where FileManager.default.fileExists(atPath: path) {
                try FileManager.default.setAttributes([.protectionKey: type], ofItemAtPath: path)
            }
        #endif
    }

    /// The flag that makes SQLite create the log and shared memory in this class
    /// (`SQLITE_OPEN_FILEPROTECTION_*`, Apple's SQLite only; 0 elsewhere).
    var sqliteOpenFlag: Int32 {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            switch self {
            case .complete: return 0x0010_0000
            case .completeUnlessOpen: return 0x0020_0000
            case .completeUntilFirstUserAuthentication: return 0x0030_0000
            case .none: return 0x0040_0000
            }
        #else
            return 0
        #endif
    }
}
