import Crypto
import Foundation
import HeraldAPIContract
import HeraldCore
import HeraldStore

// Apps, their keys and their APNs credentials: the admin's side of the API.
extension APIHandler {
    func createApp(_ input: Operations.CreateApp.Input) async throws -> Operations.CreateApp.Output {
        guard case .json(let body) = input.body else { throw APIError.badRequest("send the app as JSON") }
        try Self.checkName(body.name, field: "name")
        try Self.checkBundleID(body.bundleId)
        let app = try await apps.create(name: body.name, bundleID: body.bundleId)
        let serverSecret = APIKeySecret.generate(kind: .server)
        let clientSecret = APIKeySecret.generate(kind: .client)
        let serverKey = try await keys.create(appID: app.id, kind: .server, key: serverSecret, name: "first server key")
        let clientKey = try await keys.create(appID: app.id, kind: .client, key: clientSecret, name: "first client key")
        logger.info("app created", metadata: ["app": "\(app.id)"])
        return .created(
            .init(
                body: .json(
                    .init(
                        app: .init(app), serverKey: .init(serverKey, secret: serverSecret),
                        clientKey: .init(clientKey, secret: clientSecret)))))
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
        guard let app = try await apps.update(id: id, name: body.name, bundleID: body.bundleId) else {
            throw APIError.notFound("app")
        }
        return .ok(.init(body: .json(.init(app))))
    }

    func deleteApp(_ input: Operations.DeleteApp.Input) async throws -> Operations.DeleteApp.Output {
        let id = try Self.uuid(input.path.appId, "appId")
        guard try await apps.delete(id: id) else { throw APIError.notFound("app") }
        authenticator.forget(appID: id)
        logger.info("app deleted", metadata: ["app": "\(id)"])
        return .noContent(.init())
    }

    // MARK: Keys

    func listKeys(_ input: Operations.ListKeys.Input) async throws -> Operations.ListKeys.Output {
        let app = try await existingApp(input.path.appId)
        return .ok(.init(body: .json(.init(keys: try await keys.keys(appID: app.id).map(Components.Schemas.Key.init)))))
    }

    func createKey(_ input: Operations.CreateKey.Input) async throws -> Operations.CreateKey.Output {
        let app = try await existingApp(input.path.appId)
        guard case .json(let body) = input.body else { throw APIError.badRequest("send the key's kind as JSON") }
        if let name = body.name, name.storedLength > 200 {
            throw APIError.invalid("name", "a key name is at most 200 characters")
        }
        let kind = APIKeyKind(rawValue: body.kind.rawValue)!
        let secret = APIKeySecret.generate(kind: kind)
        let key = try await keys.create(appID: app.id, kind: kind, key: secret, name: body.name ?? "")
        return .created(.init(body: .json(.init(key, secret: secret))))
    }

    func revokeKey(_ input: Operations.RevokeKey.Input) async throws -> Operations.RevokeKey.Output {
        let appID = try Self.uuid(input.path.appId, "appId")
        let keyID = try Self.uuid(input.path.keyId, "keyId")
        guard try await keys.revoke(id: keyID, appID: appID) else { throw APIError.notFound("a live key with this id") }
        authenticator.forget(appID: appID)
        return .noContent(.init())
    }

    func rotateKey(_ input: Operations.RotateKey.Input) async throws -> Operations.RotateKey.Output {
        let appID = try Self.uuid(input.path.appId, "appId")
        let keyID = try Self.uuid(input.path.keyId, "keyId")
        var grace = 0
        if case .json(let body)? = input.body, let seconds = body.graceSeconds {
            guard (0...2_592_000).contains(seconds) else {
                throw APIError.invalid("grace_seconds", "the grace period is 0 to 2592000 seconds (30 days)")
            }
            grace = seconds
        }
        guard
            let (key, secret) = try await keys.rotate(
                id: keyID, appID: appID, graceSeconds: grace, makeKey: APIKeySecret.generate)
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
        guard let cipher else {
            throw APIError(
                .serviceUnavailable, code: "no_master_key",
                message:
                    "herald-api has no master key to encrypt credentials with: set HERALD_MASTER_KEY (docs/configuration.md)"
            )
        }
        let checked = try CredentialValidator.check(body)
        let record = try APNsCredentialRecord.sealing(
            checked.secret, appID: app.id, environment: input.path.environment.store, kind: checked.kind,
            keyID: checked.keyID,
            teamID: checked.teamID, certificateExpiresAt: checked.certificateExpiresAt, cipher: cipher)
        try await credentials.upsert(record)
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
        guard try await credentials.delete(appID: appID, environment: input.path.environment.store) else {
            throw APIError.notFound("a credential for this app and environment")
        }
        return .noContent(.init())
    }

    // MARK: Helpers

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
