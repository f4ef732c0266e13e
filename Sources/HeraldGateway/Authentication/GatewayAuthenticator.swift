import Foundation
import HeraldAPNsVocabulary
import HeraldAccess
import HeraldCore
import HeraldDomain
import HeraldGatewayProtocol
import HeraldStore
import Logging

/// Decides a hello (docs/gateway.md, "The conversation", 3): the app's client key, the device's
/// token and environment, and the alias signature when the device's app verifies identities —
/// the same rules, key cache and signature check as herald-api's client keys.
///
/// Failures that name something unknown (a key, a device, a wrong alias signature) count against the source address
/// (``FailedAuthenticationThrottle``); a source past the limit has its further failures answered
/// `too_many_failed_authentications`. The look-up comes first, so a valid hello is never refused
/// for its neighbours' guesses.
struct GatewayAuthenticator: Sendable {
    /// Who a connection is, once welcomed.
    struct Identity: Sendable, Equatable {
        var appID: UUID
        var deviceID: Int64
    }

    enum Verdict: Sendable, Equatable {
        case accepted(Identity)
        case refused(GatewayErrorCode, String, retryAfterMilliseconds: UInt32)
    }

    let keys: KeyAuthenticator
    let devices: DeviceRepository
    let apps: AppRepository
    let identitySecrets: IdentitySecretRepository
    let cipher: CredentialCipher
    let failures: FailedAuthenticationThrottle
    let logger: Logger

    func authenticate(_ hello: GatewayHello, source: String) async -> Verdict {
        do {
            return try await decide(hello, source: source)
        } catch {
            // The database did not answer: the hello is not the client's fault. Tell it to come
            // back, without counting a failure.
            logger.warning(
                "gateway could not authenticate a hello", metadata: ["error": "\(HeraldDatabase.describe(error))"])
            return .refused(
                .unavailable,
                "The gateway cannot check hellos right now (its database did not answer); connect again later.",
                retryAfterMilliseconds: 5_000)
        }
    }

    private func decide(_ hello: GatewayHello, source: String) async throws -> Verdict {
        guard let key = try await keys.authenticate(Substring(hello.clientKey)), key.kind == .client else {
            return failed(
                .unknownKey,
                "client_key is not a live client key of any app (hc_…, the key the app registers devices with).",
                source: source)
        }
        guard let token = Self.tokenBytes(hello.deviceToken) else {
            return failed(
                .unknownDevice,
                "device_token is the device's token as registered: hexadecimal, two digits a byte, no spaces.",
                source: source)
        }
        guard let environment = APNsEnvironment(rawValue: hello.environment) else {
            return failed(
                .unknownDevice, "environment is production or sandbox, the one the device registered in.",
                source: source)
        }
        guard let device = try await devices.device(token: token, appID: key.appID), device.status == .active,
            device.environment == environment
        else {
            return failed(
                .unknownDevice,
                "No active device of this app has this token in \(environment.rawValue): register it (POST /v1/devices), then connect.",
                source: source)
        }
        if let alias = device.alias, !alias.isEmpty {
            guard let app = try await apps.app(id: key.appID) else {
                return failed(.unknownKey, "client_key's app no longer exists.", source: source)
            }
            if app.clientRules.identityVerification {
                guard !hello.aliasSignature.isEmpty else {
                    return .refused(
                        .aliasSignatureRequired,
                        "This device is bound to an alias and its app verifies identities: send alias_signature, the v2 signature its registration used (docs/security.md).",
                        retryAfterMilliseconds: 0)
                }
                let secrets = try await identitySecrets.secrets(appID: app.id, cipher: cipher)
                let check = AliasSignature.check(
                    hello.aliasSignature, alias: alias, token: token, secrets: secrets,
                    acceptsV1: app.clientRules.aliasSignaturesV1, now: Int64(Date().timeIntervalSince1970))
                if let refusal = AliasSignature.refusal(check, hasSecrets: !secrets.isEmpty) {
                    // A wrong signature is a guess like an unknown key: it counts against the source.
                    return failed(
                        refusal.expired ? .aliasSignatureExpired : .aliasSignatureInvalid, refusal.message,
                        source: source)
                }
            }
        }
        return .accepted(Identity(appID: key.appID, deviceID: device.id))
    }

    /// A refusal that counts against `source`: past the limit, `too_many_failed_authentications`.
    private func failed(_ code: GatewayErrorCode, _ message: String, source: String) -> Verdict {
        if let wait = failures.recordFailure(source: source) {
            return .refused(
                .tooManyFailedAuthentications,
                "Too many hellos from this address named unknown keys or devices; wait \(wait) s.",
                retryAfterMilliseconds: UInt32(wait * 1000))
        }
        return .refused(code, message, retryAfterMilliseconds: 0)
    }

    /// The token's bytes: hexadecimal digits of either case, an even and non-zero number of them
    /// (at most 400, past any token a registration takes).
    static func tokenBytes(_ text: String) -> [UInt8]? {
        guard (1...400).contains(text.utf8.count) else { return nil }
        return Hexadecimal.decode(text)
    }
}
