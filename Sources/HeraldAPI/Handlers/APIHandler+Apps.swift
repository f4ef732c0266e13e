import Crypto
import Foundation
import HeraldAPIContract
import HeraldAccess
import HeraldCore
import HeraldDomain
import HeraldStore

// Apps, their keys and their APNs credentials: the admin's side of the API.
extension APIHandler {
    func createApp(_ input: Operations.CreateApp.Input) async throws -> Operations.CreateApp.Output {
        guard case .json(let body) = input.body else { throw APIError.badRequest("send the app as JSON") }
        try Self.checkName(body.name, field: "name")
        try Self.checkBundleID(body.bundleId)
        try DeviceInput.tags(body.clientTags, field: "client_tags", maximum: 1000)
        try Self.checkClientAttributes(body.clientAttributes)
        let id = UUID()
        let app = try await apps.create(
            name: body.name, bundleID: body.bundleId, id: id,
            rules: .init(
                identityVerification: body.identityVerification, allowedClientTags: body.clientTags.map { $0 },
                allowedClientAttributes: body.clientAttributes.map { $0 }),
            audit: auditEntry("app.created", appID: id, details: ["name": body.name, "bundle_id": body.bundleId]))
        let serverSecret = APIKeySecret.generate(kind: .server)
        let clientSecret = APIKeySecret.generate(kind: .client)
        let serverKey = try await keys.create(appID: app.id, kind: .server, key: serverSecret, name: "first server key")
        let clientKey = try await keys.create(appID: app.id, kind: .client, key: clientSecret, name: "first client key")
        var identitySecret: String?
        if let cipher {
            let secret = AliasSignature.newSecret()
            try await identitySecrets.replace(appID: app.id, secret: secret, graceSeconds: 0, cipher: cipher)
            identitySecret = secret
        }
        logger.info("app created", metadata: ["app": "\(app.id)"])
        return .created(
            .init(
                body: .json(
                    .init(
                        app: .init(app), serverKey: .init(serverKey, secret: serverSecret),
                        clientKey: .init(clientKey, secret: clientSecret), identitySecret: identitySecret))))
    }

    func listApps(_ input: Operations.ListApps.Input) async throws -> Operations.ListApps.Output {
        let limit = try Self.pageSize(input.query.limit)
        let cursor = try input.query.cursor.map { id throws(APIError) in try Self.uuid(id, "cursor") }
        let page = try await apps.list(after: cursor, limit: limit)
        return .ok(
            .init(
                body: .json(
                    .init(
                        apps: page.map(Components.Schemas.App.init),
                        nextCursor: page.count == limit ? page.last?.id.lowercased : nil))))
    }

    func getApp(_ input: Operations.GetApp.Input) async throws -> Operations.GetApp.Output {
        let app = try await existingApp(input.path.appId)
        return .ok(.init(body: .json(.init(app))))
    }

    func updateApp(_ input: Operations.UpdateApp.Input) async throws -> Operations.UpdateApp.Output {
        let id = try Self.uuid(input.path.appId, "appId")
        guard case .json(let body) = input.body else { throw APIError.badRequest("send the changes as JSON") }
        if let name = body.name { try Self.checkName(name, field: "name") }
        if let bundleID = body.bundleId { try Self.checkBundleID(bundleID) }
        // Legacy client access loosens what the app's public key may do: an app's admin key may
        // turn it off, only the admin token back on.
        if body.aliasSignaturesV1 == true, Principal.currentKey != nil {
            throw APIError(
                .forbidden, code: .adminOnly,
                message:
                    "Taking the old form of alias signature again takes the admin token: a v1 signature is valid for any device and for ever."
            )
        }
        if body.legacyClientAccess == true, Principal.currentKey != nil {
            throw APIError(
                .forbidden, code: .adminOnly,
                message:
                    "Turning legacy client access back on takes the admin token: it lets the app's public client key change devices by id and bind aliases unsigned."
            )
        }
        try DeviceInput.tags(body.clientTags, field: "client_tags", maximum: 1000)
        var allowedTags: [String]?? = body.clientTags.map { $0 }
        if body.clientTagsUnrestricted == true {
            guard body.clientTags == nil else {
                throw APIError.invalid(
                    "client_tags_unrestricted", "send client_tags or client_tags_unrestricted, not both")
            }
            allowedTags = .some(nil)
        }
        try Self.checkClientAttributes(body.clientAttributes)
        var allowedAttributes: [String]?? = body.clientAttributes.map { $0 }
        if body.clientAttributesUnrestricted == true {
            guard body.clientAttributes == nil else {
                throw APIError.invalid(
                    "client_attributes_unrestricted",
                    "send client_attributes or client_attributes_unrestricted, not both")
            }
            allowedAttributes = .some(nil)
        }
        let policy: DeliveryPolicy?? = try body.deliveryPolicy.map { .some(try DeliveryPolicy($0.value1)) }
        let changes = AppRepository.Changes(
            name: body.name, bundleID: body.bundleId, identityVerification: body.identityVerification,
            legacyClientAccess: body.legacyClientAccess, aliasSignaturesV1: body.aliasSignaturesV1,
            allowedClientTags: allowedTags, allowedClientAttributes: allowedAttributes, deliveryPolicy: policy)
        var details: [String: String] = [:]
        if let name = body.name { details["name"] = name }
        if let bundleID = body.bundleId { details["bundle_id"] = bundleID }
        if let verification = body.identityVerification { details["identity_verification"] = "\(verification)" }
        if let legacy = body.legacyClientAccess { details["legacy_client_access"] = "\(legacy)" }
        if let v1 = body.aliasSignaturesV1 { details["alias_signatures_v1"] = "\(v1)" }
        if let tags = allowedTags { details["client_tags"] = tags?.joined(separator: ",") ?? "(any)" }
        if let attributes = allowedAttributes {
            details["client_attributes"] = attributes?.joined(separator: ",") ?? "(any)"
        }
        if let policy { details["delivery_policy"] = policy.flatMap { $0.isEmpty ? nil : $0.json } ?? "(none)" }
        guard
            let app = try await apps.update(
                id: id, changes, audit: auditEntry("app.updated", appID: id, details: details))
        else { throw APIError.notFound("app") }
        return .ok(.init(body: .json(.init(app))))
    }

    func deleteApp(_ input: Operations.DeleteApp.Input) async throws -> Operations.DeleteApp.Output {
        let id = try Self.uuid(input.path.appId, "appId")
        guard try await apps.delete(id: id, audit: auditEntry("app.deleted", appID: id)) else {
            throw APIError.notFound("app")
        }
        authenticator.forget(appID: id)
        logger.info("app deleted", metadata: ["app": "\(id)"])
        return .noContent(.init())
    }

    // MARK: Keys

    func listKeys(_ input: Operations.ListKeys.Input) async throws -> Operations.ListKeys.Output {
        let app = try await existingApp(input.path.appId)
        return .ok(.init(body: .json(.init(keys: try await keys.keys(appID: app.id).map(Components.Schemas.Key.init)))))
    }

    /// Live keys an app may have at once.
    static let keysPerApp = 100

    func createKey(_ input: Operations.CreateKey.Input) async throws -> Operations.CreateKey.Output {
        let app = try await existingApp(input.path.appId)
        guard case .json(let body) = input.body else { throw APIError.badRequest("send the key's kind as JSON") }
        if let name = body.name, name.storedLength > 200 {
            throw APIError.invalid("name", "a key name is at most 200 characters")
        }
        let kind = APIKeyKind(rawValue: body.kind.rawValue)!
        let scopes = body.scopes.map { $0.map { APIKeyScope(rawValue: $0.rawValue)! } }
        if let scopes {
            guard kind == .server else { throw APIError.invalid("scopes", "only server keys have scopes") }
            guard Set(scopes).count == scopes.count else {
                throw APIError.invalid("scopes", "name each scope once")
            }
        }
        let secret = APIKeySecret.generate(kind: kind)
        var details = ["kind": kind.rawValue]
        if let scopes { details["scopes"] = scopes.map(\.rawValue).joined(separator: ",") }
        let id = UUID()
        guard
            let key = try await keys.create(
                appID: app.id, kind: kind, key: secret, name: body.name ?? "", scopes: scopes, id: id,
                liveAtMost: Self.keysPerApp,
                audit: auditEntry("key.created", appID: app.id, target: id.lowercased, details: details))
        else {
            throw APIError.conflict(
                "the app has \(Self.keysPerApp) live keys already; revoke one it no longer uses first",
                code: .keyLimit)
        }
        return .created(.init(body: .json(.init(key, secret: secret))))
    }

    func revokeKey(_ input: Operations.RevokeKey.Input) async throws -> Operations.RevokeKey.Output {
        let appID = try Self.uuid(input.path.appId, "appId")
        let keyID = try Self.uuid(input.path.keyId, "keyId")
        guard
            try await keys.revoke(
                id: keyID, appID: appID, audit: auditEntry("key.revoked", appID: appID, target: keyID.lowercased))
        else { throw APIError.notFound("a live key with this id") }
        authenticator.forget(appID: appID)
        return .noContent(.init())
    }

    func rotateKey(_ input: Operations.RotateKey.Input) async throws -> Operations.RotateKey.Output {
        let appID = try Self.uuid(input.path.appId, "appId")
        let keyID = try Self.uuid(input.path.keyId, "keyId")
        let grace: Int
        switch input.body {
        case .json(let body)?: grace = try Self.gracePeriod(seconds: body.graceSeconds)
        case nil: grace = 0
        }
        let newID = UUID()
        guard
            let (key, secret) = try await keys.rotate(
                id: keyID, appID: appID, graceSeconds: grace, newID: newID, makeKey: APIKeySecret.generate,
                audit: auditEntry(
                    "key.rotated", appID: appID, target: keyID.lowercased,
                    details: ["new_key": newID.lowercased, "grace_seconds": "\(grace)"]))
        else { throw APIError.notFound("a live key with this id") }
        authenticator.forget(appID: appID)
        return .created(.init(body: .json(.init(key, secret: secret))))
    }

    // MARK: APNs credentials

    func listCredentials(_ input: Operations.ListCredentials.Input) async throws -> Operations.ListCredentials.Output {
        let app = try await existingApp(input.path.appId)
        let stored = try await credentials.credentials(appID: app.id)
        return .ok(.init(body: .json(.init(credentials: stored.map(Components.Schemas.Credential.init)))))
    }

    func putCredential(_ input: Operations.PutCredential.Input) async throws -> Operations.PutCredential.Output {
        let app = try await existingApp(input.path.appId)
        guard case .json(let body) = input.body else { throw APIError.badRequest("send the credential as JSON") }
        let cipher = try requireCipher(for: "credentials")
        let checked = try CredentialValidator.check(body)
        let record = try APNsCredentialRecord.sealing(
            checked.secret, appID: app.id, environment: input.path.environment.store, kind: checked.kind,
            keyID: checked.keyID,
            teamID: checked.teamID, certificateExpiresAt: checked.certificateExpiresAt, cipher: cipher)
        try await credentials.upsert(
            record,
            audit: auditEntry(
                "credential.stored", appID: app.id, target: record.environment.rawValue,
                details: ["kind": record.kind.rawValue]))
        logger.info(
            "APNs credential stored",
            metadata: [
                "app": "\(app.id)", "environment": "\(record.environment.rawValue)",
                "kind": "\(record.kind.rawValue)",
            ])
        guard
            let stored = try await credentials.credentials(appID: app.id).first(where: {
                $0.environment == record.environment
            })
        else {
            throw APIError.notFound("app")
        }
        return .ok(.init(body: .json(.init(stored))))
    }

    func deleteCredential(_ input: Operations.DeleteCredential.Input) async throws -> Operations.DeleteCredential.Output
    {
        let appID = try Self.uuid(input.path.appId, "appId")
        guard
            try await credentials.delete(
                appID: appID, environment: input.path.environment.store,
                audit: auditEntry("credential.deleted", appID: appID, target: input.path.environment.rawValue))
        else {
            throw APIError.notFound("a credential for this app and environment")
        }
        return .noContent(.init())
    }

    // MARK: Identity secret and audit log

    func rotateIdentitySecret(_ input: Operations.RotateIdentitySecret.Input) async throws
        -> Operations.RotateIdentitySecret.Output
    {
        let app = try await existingApp(input.path.appId)
        var grace = 0
        if case .json(let body)? = input.body, let seconds = body.graceSeconds {
            guard (0...2_592_000).contains(seconds) else {
                throw APIError.invalid("grace_seconds", "the grace period is 0 to 2592000 seconds (30 days)")
            }
            grace = seconds
        }
        let cipher = try requireCipher(for: "identity secrets")
        let secret = AliasSignature.newSecret()
        try await identitySecrets.replace(
            appID: app.id, secret: secret, graceSeconds: grace, cipher: cipher,
            audit: auditEntry("identity_secret.rotated", appID: app.id, details: ["grace_seconds": "\(grace)"]))
        return .created(.init(body: .json(.init(identitySecret: secret))))
    }

    /// A secret rotation's grace period in seconds: 0 to 30 days, 0 when not given.
    static func gracePeriod(seconds: Int?) throws(APIError) -> Int {
        guard let seconds else { return 0 }
        guard (0...2_592_000).contains(seconds) else {
            throw .invalid("grace_seconds", "the grace period is 0 to 2592000 seconds (30 days)")
        }
        return seconds
    }

    func listAuditEvents(_ input: Operations.ListAuditEvents.Input) async throws -> Operations.ListAuditEvents.Output {
        let appID = try Self.uuid(input.path.appId, "appId")
        let limit = try Self.pageSize(input.query.limit)
        let cursor = input.query.cursor ?? 0
        guard cursor >= 0 else { throw APIError.badRequest("cursor is an entry id from next_cursor", field: "cursor") }
        let page = try await audit.events(appID: appID, after: cursor, limit: limit)
        if page.isEmpty, cursor == 0, try await apps.app(id: appID) == nil {
            // An app deleted keeps its entries; one that never existed has none.
            throw APIError.notFound("app")
        }
        return .ok(
            .init(
                body: .json(
                    .init(
                        events: page.map(Components.Schemas.AuditEvent.init),
                        nextCursor: page.count == limit ? page.last?.id : nil))))
    }

    // MARK: Helpers

    /// The audit entry of an action by the calling principal through this request, for the
    /// repository method that makes the change to append in the change's transaction.
    func auditEntry(_ action: String, appID: UUID?, target: String? = nil, details: [String: String] = [:])
        -> AuditEntry
    {
        AuditEntry(action, appID: appID, target: target, origin: Principal.auditOrigin, details: details)
    }

    /// An app's client attributes: each a valid attribute name, at most as many as a device
    /// may have.
    static func checkClientAttributes(_ names: [String]?) throws(APIError) {
        guard let names else { return }
        guard names.count <= DeviceAttributes.maximumCount else {
            throw .invalid("client_attributes", "at most \(DeviceAttributes.maximumCount) client attributes")
        }
        if let bad = names.first(where: { !DeviceAttributes.isValidName($0) }) {
            throw .invalid(
                "client_attributes",
                "\"\(bad)\" is not an attribute name: 1 to 64 lower-case letters, digits and _, starting with a letter")
        }
    }

    /// The audit details of a segment's or template's update: its id, and its name when that
    /// changed.
    static func changed(_ id: UUID, name: String?, kind: String = "segment") -> [String: String] {
        var details = [kind: id.lowercased]
        if let name { details["name"] = name }
        return details
    }

    /// The cipher that seals secrets, or a 503 naming the missing master key.
    func requireCipher(for what: String) throws -> CredentialCipher {
        guard let cipher else {
            throw APIError(
                .serviceUnavailable, code: .noMasterKey,
                message:
                    "herald-api has no master key to encrypt \(what) with: set HERALD_MASTER_KEY (docs/configuration.md)"
            )
        }
        return cipher
    }

    func existingApp(_ text: String) async throws -> App {
        let id = try Self.uuid(text, "appId")
        guard let app = try await apps.app(id: id) else { throw APIError.notFound("app") }
        return app
    }

    static func checkName(_ name: String, field: String) throws(APIError) {
        guard (1...200).contains(name.storedLength), !name.allSatisfy(\.isWhitespace) else {
            throw .invalid(field, "a name is 1 to 200 characters, not only spaces")
        }
    }

    static func checkBundleID(_ bundleID: String) throws(APIError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
        guard (1...255).contains(bundleID.storedLength), bundleID.allSatisfy(allowed.contains) else {
            throw .invalid(
                "bundle_id",
                "a bundle id is 1 to 255 letters, digits, dots, hyphens and underscores (for example com.example.app)")
        }
    }
}
