/// What one person sees of one workspace on a shared phone: their own pulled records, feed
/// cursor, fetched files and items. Stored as one key, the workspace alone when nobody is
/// signed in (so a device without people keeps the keys it always had), or the workspace and
/// the principal joined by a unit separator, which neither may contain.
struct PersonalView: Hashable, Sendable {
    var workspace: String
    var principal: String?

    static let separator: Character = "\u{1F}"

    var key: String {
        guard let principal else { return workspace }
        return workspace + String(Self.separator) + principal
    }

    init(workspace: String, principal: String?) {
        self.workspace = workspace
        self.principal = principal
    }

    init(key: String) {
        if let cut = key.firstIndex(of: Self.separator) {
            workspace = String(key[..<cut])
            principal = String(key[key.index(after: cut)...])
        } else {
            workspace = key
            principal = nil
        }
    }
}
