import Foundation
import HTTPTypes
import HeraldAPIContract
import Hummingbird
import NIOCore
import OpenAPIRuntime

/// Apps, keys and APNs credentials: the admin token's pages (all apps) and an app admin key's
/// (its own app).
extension ConsoleRoutes {
    struct AppsPage {
        struct Row {
            var id: String
            var name: String
            var bundleID: String
            var createdAt: String
        }

        var chrome: Chrome
        var apps: [Row]
        var hasApps: Bool
        var next: String?
    }

    struct AppPage {
        struct AppInfo {
            var id: String
            var name: String
            var bundleID: String
        }

        struct CredentialRow {
            var environment: String
            var kind: String
            var identity: String
            var expires: String?
            var expiring: Bool
            var expired: Bool
            var updatedAt: String
        }

        struct KeyRow {
            var id: String
            var appID: String
            var csrf: String
            var prefix: String
            var kind: String
            var scopes: String?
            var name: String
            var lastUsed: String
            var revoked: String?
        }

        var chrome: Chrome
        var app: AppInfo
        /// The app's client keys still have the rules from before the trust migration.
        var legacyMode: String?
        var credentials: [CredentialRow]
        var hasCredentials: Bool
        var keys: [KeyRow]
    }

    struct SecretsPage {
        struct Secret {
            var id: Int
            var label: String
            var value: String
        }

        var chrome: Chrome
        var heading: String
        var secrets: [Secret]
        var plural: Bool
        var back: String
    }

    /// The app an app admin key manages, or nil for the admin token.
    static func ownApp(_ signedIn: SignedIn) -> String? {
        signedIn.identity.key.map { $0.appID.uuidString.lowercased() }
    }

    func appsPage(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        guard signedIn.identity.managesApps else { return Self.redirect("/console/pushes") }
        if let own = Self.ownApp(signedIn) { return Self.redirect("/console/apps/\(own)") }
        let cursor = request.uri.queryParameters.get("cursor").flatMap(UUID.init(uuidString:))?.uuidString
            .lowercased()
        let list: Components.Schemas.AppList
        do {
            list = try await gateway.perform(
                "listApps", path: "/v1/apps", as: signedIn.identity, request: signedIn.origin
            ) { api in try await api.listApps(.init(query: .init(cursor: cursor, limit: 100))).ok.body.json }
        } catch {
            return Self.refusal(signedIn, error)
        }
        let rows = list.apps.map {
            AppsPage.Row(id: $0.id, name: $0.name, bundleID: $0.bundleId, createdAt: PushView.time($0.createdAt))
        }
        let page = AppsPage(
            chrome: signedIn.chrome("Apps", section: .apps), apps: rows, hasApps: !rows.isEmpty,
            next: list.nextCursor.map { "/console/apps?cursor=\($0)" })
        return Self.html(ConsoleTemplates.render("apps", page))
    }

    func createApp(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        let form = try await Self.form(request)
        guard ConsoleCookies.csrfMatches(form["csrf"], signedIn.csrf) else { return Self.csrfRefusal(signedIn) }
        let body = Components.Schemas.AppCreate(
            name: (form["name"] ?? "").trimmingCharacters(in: .whitespaces),
            bundleId: (form["bundle_id"] ?? "").trimmingCharacters(in: .whitespaces))
        do {
            let created = try await gateway.perform(
                "createApp", path: "/v1/apps", as: signedIn.identity, request: signedIn.origin
            ) { api in try await api.createApp(.init(body: .json(body))).created.body.json }
            var secrets = [
                SecretsPage.Secret(id: 1, label: "Server key", value: created.serverKey.key),
                SecretsPage.Secret(id: 2, label: "Client key", value: created.clientKey.key),
            ]
            if let identity = created.identitySecret {
                secrets.append(SecretsPage.Secret(id: 3, label: "Identity secret", value: identity))
            }
            return Self.html(
                ConsoleTemplates.render(
                    "secrets",
                    SecretsPage(
                        chrome: signedIn.chrome("App created", section: .apps),
                        heading: "\(created.app.name) is created",
                        secrets: secrets, plural: true, back: "/console/apps/\(created.app.id)")), status: .created)
        } catch {
            return Self.message(
                signedIn, status: error.status, heading: "The app was not created", text: error.message,
                link: .init(href: "/console/apps", label: "Back to apps"))
        }
    }

    func appPage(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        guard signedIn.identity.managesApps else { return Self.redirect("/console/pushes") }
        let appID = context.parameters.get("appId") ?? ""
        let path = "/v1/apps/\(appID)"
        let app: Components.Schemas.App
        let keys: Components.Schemas.KeyList
        let credentials: Components.Schemas.CredentialList
        do {
            app = try await gateway.perform("getApp", path: path, as: signedIn.identity, request: signedIn.origin) {
                api in try await api.getApp(.init(path: .init(appId: appID))).ok.body.json
            }
            keys = try await gateway.perform(
                "listKeys", path: path + "/keys", as: signedIn.identity, request: signedIn.origin
            ) { api in try await api.listKeys(.init(path: .init(appId: appID))).ok.body.json }
            credentials = try await gateway.perform(
                "listCredentials", path: path + "/credentials", as: signedIn.identity, request: signedIn.origin
            ) { api in try await api.listCredentials(.init(path: .init(appId: appID))).ok.body.json }
        } catch {
            return Self.refusal(signedIn, error)
        }
        let now = Date()
        let credentialRows = credentials.credentials.map { credential in
            AppPage.CredentialRow(
                environment: credential.environment.rawValue, kind: credential.kind.rawValue,
                identity: [credential.keyId, credential.teamId].compactMap { $0 }.joined(separator: " / "),
                expires: credential.certificateExpiresAt.map(PushView.time),
                expiring: credential.certificateExpiresAt.map { $0 > now && $0 < now.addingTimeInterval(30 * 86_400) }
                    ?? false,
                expired: credential.certificateExpiresAt.map { $0 <= now } ?? false,
                updatedAt: PushView.time(credential.updatedAt))
        }
        let keyRows = keys.keys.map { key in
            AppPage.KeyRow(
                id: key.id, appID: app.id, csrf: signedIn.csrf, prefix: key.prefix, kind: key.kind.rawValue,
                scopes: key.scopes.map { $0.map(\.rawValue).joined(separator: ", ") }, name: key.name,
                lastUsed: key.lastUsedAt.map(PushView.time) ?? "never",
                revoked: key.revokedAt.map { $0 <= now ? "revoked" : "ends \(PushView.time($0))" })
        }
        var chrome = signedIn.chrome(app.name, section: .apps)
        chrome.notice = Self.appNotice(request.uri.queryParameters.get("done"))
        let page = AppPage(
            chrome: chrome, app: .init(id: app.id, name: app.name, bundleID: app.bundleId),
            legacyMode: app.legacyModeWarning, credentials: credentialRows, hasCredentials: !credentialRows.isEmpty,
            keys: keyRows)
        return Self.html(ConsoleTemplates.render("app", page))
    }

    static func appNotice(_ done: String?) -> String? {
        switch done {
        case "credential": "The credential is stored: pushes to that environment use it from now on."
        case "revoked": "The key is revoked: it no longer works."
        default: nil
        }
    }

    func createKey(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        let form = try await Self.form(request)
        guard ConsoleCookies.csrfMatches(form["csrf"], signedIn.csrf) else { return Self.csrfRefusal(signedIn) }
        let appID = context.parameters.get("appId") ?? ""
        let kind = form["kind"].flatMap(Components.Schemas.KeyKind.init(rawValue:)) ?? .server
        let name = form["name"].flatMap { PushForm.text($0) }
        do {
            let created = try await gateway.perform(
                "createKey", path: "/v1/apps/\(appID)/keys", as: signedIn.identity, request: signedIn.origin
            ) { api in
                try await api.createKey(.init(path: .init(appId: appID), body: .json(.init(kind: kind, name: name))))
                    .created.body.json
            }
            return showOnce(signedIn, heading: "A new \(kind.rawValue) key", key: created, appID: appID)
        } catch {
            return Self.message(
                signedIn, status: error.status, heading: "The key was not created", text: error.message,
                link: .init(href: "/console/apps/\(appID)", label: "Back to the app"))
        }
    }

    func keyAction(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        let form = try await Self.form(request)
        guard ConsoleCookies.csrfMatches(form["csrf"], signedIn.csrf) else { return Self.csrfRefusal(signedIn) }
        let appID = context.parameters.get("appId") ?? ""
        let keyID = context.parameters.get("keyId") ?? ""
        let action = context.parameters.get("action") ?? ""
        let back = "/console/apps/\(appID)"
        let path = "/v1/apps/\(appID)/keys/\(keyID)"
        guard action == "rotate" || action == "revoke" else {
            return Self.message(
                signedIn, status: .notFound, heading: "Not found", text: "A key has no action “\(action)”.")
        }
        if form["confirmed"] != "1" {
            let rotate = action == "rotate"
            let page = ConfirmPage(
                chrome: signedIn.chrome(rotate ? "Rotate the key?" : "Revoke the key?", section: .apps),
                heading: rotate ? "Rotate this key?" : "Revoke this key now?",
                text: rotate
                    ? "A new key is made and shown once; the old one keeps working for a day, then stops."
                    : "Everything using it stops working at once. This cannot be undone.",
                action: "/console/apps/\(appID)/keys/\(keyID)/\(action)", button: rotate ? "Rotate" : "Yes, revoke it",
                back: back)
            return Self.html(ConsoleTemplates.render("confirm", page))
        }
        do {
            if action == "rotate" {
                let created = try await gateway.perform(
                    "rotateKey", path: path + "/rotate", as: signedIn.identity, request: signedIn.origin
                ) { api in
                    try await api.rotateKey(.init(path: .init(appId: appID, keyId: keyID))).created.body.json
                }
                return showOnce(signedIn, heading: "The rotated key", key: created, appID: appID)
            }
            _ = try await gateway.perform("revokeKey", path: path, as: signedIn.identity, request: signedIn.origin) {
                api in try await api.revokeKey(.init(path: .init(appId: appID, keyId: keyID))).noContent
            }
            return Self.redirect(back + "?done=revoked")
        } catch {
            return Self.message(
                signedIn, status: error.status, heading: "Not done", text: error.message,
                link: .init(href: back, label: "Back to the app"))
        }
    }

    func showOnce(_ signedIn: SignedIn, heading: String, key: Components.Schemas.KeyCreated, appID: String)
        -> Response
    {
        Self.html(
            ConsoleTemplates.render(
                "secrets",
                SecretsPage(
                    chrome: signedIn.chrome(heading, section: .apps), heading: heading,
                    secrets: [.init(id: 1, label: "\(key.kind.rawValue.capitalized) key", value: key.key)],
                    plural: false, back: "/console/apps/\(appID)")), status: .created)
    }

    /// The credential upload: a multipart form with the file.
    func putCredential(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        let appID = context.parameters.get("appId") ?? ""
        // Refused before the body is read: only who manages the app uploads its credentials.
        guard signedIn.identity.manages(appID: appID) else {
            return Self.message(
                signedIn, status: .forbidden, heading: "Not uploaded",
                text: "Uploading an app's APNs credential takes the admin token or that app's admin key.",
                link: .init(href: "/console", label: "Back to the console"))
        }
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: Self.maximumFormBytes)
        } catch {
            throw HTTPError(
                .contentTooLarge, message: "A credential file is at most \(Self.maximumFormBytes / 1024) KiB.")
        }
        let back = "/console/apps/\(appID)"
        guard let boundary = request.headers[.contentType].flatMap(MultipartForm.boundary(contentType:)),
            let form = MultipartForm(body: Array(buffer.readableBytesView), boundary: boundary)
        else {
            return Self.message(
                signedIn, status: .badRequest, heading: "Not uploaded",
                text: "The upload form was not sent as a file upload.",
                link: .init(href: back, label: "Back to the app"))
        }
        guard ConsoleCookies.csrfMatches(form.text("csrf"), signedIn.csrf) else { return Self.csrfRefusal(signedIn) }
        let environment =
            form.text("environment").flatMap(Components.Schemas.Environment.init(rawValue:)) ?? .production
        guard let file = form.file("file") else {
            return Self.message(
                signedIn, status: .badRequest, heading: "Not uploaded",
                text: "Choose the .p8, .p12 or .pem file to upload.",
                link: .init(href: back, label: "Back to the app"))
        }
        let input = CredentialFile.input(
            kind: form.text("kind") ?? "token", file: file, keyID: form.text("key_id"), teamID: form.text("team_id"),
            passphrase: form.text("passphrase"))
        do {
            _ = try await gateway.perform(
                "putCredential", path: "/v1/apps/\(appID)/credentials/\(environment.rawValue)", as: signedIn.identity,
                request: signedIn.origin
            ) { api in
                try await api.putCredential(
                    .init(path: .init(appId: appID, environment: environment), body: .json(input))
                ).ok.body.json
            }
            return Self.redirect(back + "?done=credential")
        } catch {
            return Self.message(
                signedIn, status: error.status, heading: "The credential was not stored", text: error.message,
                link: .init(href: back, label: "Back to the app"))
        }
    }
}

/// An uploaded credential file as the Open API's `CredentialInput`.
enum CredentialFile {
    /// A .p8 signing key (`token`), or a certificate: PEM text (certificate and key in one file)
    /// or PKCS#12 bytes.
    static func input(kind: String, file: [UInt8], keyID: String?, teamID: String?, passphrase: String?)
        -> Components.Schemas.CredentialInput
    {
        let text = String(decoding: file, as: UTF8.self)
        guard kind == "certificate" else {
            return .init(
                kind: .token, keyId: keyID.flatMap { PushForm.text($0) }, teamId: teamID.flatMap { PushForm.text($0) },
                privateKey: text)
        }
        if text.contains("-----BEGIN CERTIFICATE-----") {
            return .init(kind: .certificate, privateKey: text, certificatePem: text)
        }
        return .init(kind: .certificate, pkcs12Base64: Data(file).base64EncodedString(), passphrase: passphrase ?? "")
    }
}
