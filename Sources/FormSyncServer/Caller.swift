import FormSyncHTTP

/// Who a request acts for, once it passed the access rules (see `AccessControl`).
struct Caller {
    var principal: String
    var role: SyncServer.Role
    /// The workspace it named, one its token was issued for.
    var workspace: String
    /// The device its token belongs to (nil for a token issued without one).
    var device: String? = nil

    /// Whether it may read or edit what `owner` created.
    func owns(_ owner: String?) -> Bool { role == .backOffice || owner == principal }

    /// Whether it may see a record of `scope`.
    func sees(scope: String) -> Bool { role == .backOffice || scope.isEmpty || scope == principal }

    /// The principal whose scope the change feed is cut to; nil for the back office (all).
    var feedPrincipal: String? { role == .backOffice ? nil : principal }
}

/// A request's caller, or the reply that refuses it.
enum CallerCheck {
    case allowed(Caller)
    case refused(HTTPResponse)
}
