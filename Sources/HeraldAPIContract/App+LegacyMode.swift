extension Components.Schemas.App {
    /// Whether the app's client keys still follow the rules from before the trust migration
    /// (docs/security.md): legacy client access on (a client key may address devices by
    /// registration id and change them), or identity verification off (aliases bound unsigned).
    public var isInLegacyMode: Bool { legacyClientAccess || !identityVerification }

    /// What legacy mode lets this app's client keys do, and how to leave it; nil when the app is
    /// not in it. The console and `herald app get` show it as is.
    public var legacyModeWarning: String? {
        guard isInLegacyMode else { return nil }
        var loose: [String] = []
        if legacyClientAccess { loose.append("change any device of the app by its registration id") }
        if !identityVerification { loose.append("bind any alias without the back-end's signature") }
        return "Legacy client rules: anyone holding this app's client key (it ships inside the app) can "
            + loose.joined(separator: " and ")
            + ". Once the app's SDK addresses its device by token and its back-end signs aliases, switch: "
            + "herald app update --app \(id) --identity-verification on --legacy-client-access off"
    }
}
