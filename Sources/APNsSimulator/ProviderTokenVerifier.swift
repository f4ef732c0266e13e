import Crypto
import Foundation
import HeraldAPNsVocabulary
import Synchronization

/// A token-signing key registered with the simulator, as a developer account has them: an ES256
/// key id, the team it belongs to, its public key, and the topics (bundle ids) of that team.
public struct ProviderKey: Sendable, Codable, Hashable {
    public var keyID: String
    public var teamID: String
    /// The public key in PEM (`-----BEGIN PUBLIC KEY-----`).
    public var publicKeyPEM: String
    /// Bundle ids the team may push to; empty allows any topic.
    public var topics: [String]

    public init(keyID: String, teamID: String, publicKeyPEM: String, topics: [String]) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKeyPEM = publicKeyPEM
        self.topics = topics
    }
}

/// The keys the simulator knows, shared by every connection; keys can be added at run time.
public final class ProviderKeyRegistry: Sendable {
    struct Entry: Sendable {
        let key: ProviderKey
        let publicKey: P256.Signing.PublicKey
        let topics: Set<String>
    }

    private let entries = Mutex<[String: Entry]>([:])

    public init(_ keys: [ProviderKey] = []) throws {
        for key in keys { try register(key) }
    }

    /// Adds or replaces a key.
    /// - Throws: ``APNsSimulatorError`` when the PEM is not a P-256 public key.
    public func register(_ key: ProviderKey) throws {
        let publicKey: P256.Signing.PublicKey
        do {
            publicKey = try P256.Signing.PublicKey(pemRepresentation: key.publicKeyPEM)
        } catch {
            throw APNsSimulatorError("key \(key.keyID): the public key is not a P-256 (ES256) key in PEM form")
        }
        let entry = Entry(key: key, publicKey: publicKey, topics: Set(key.topics))
        entries.withLock { $0[key.keyID] = entry }
    }

    var keys: [ProviderKey] { entries.withLock { $0.values.map(\.key) } }

    func entry(for keyID: String) -> Entry? { entries.withLock { $0[keyID] } }
}

/// A provider token whose signature checked out.
struct VerifiedProviderToken: Sendable {
    let keyID: String
    let teamID: String
    /// `iat`, seconds since 1970.
    let issuedAt: Int64
    /// The team's topics; empty means any.
    let topics: Set<String>
}

/// Checks an ES256 provider token (JWT) as APNs does: header `alg` ES256 with a `kid` the
/// simulator knows, claims `iss` equal to that key's team and a numeric `iat`, and a raw
/// (r‖s) P-256 signature over `header.claims`.
enum ProviderTokenVerifier {
    private struct Header: Decodable {
        let alg: String?
        let kid: String?
    }

    private struct Claims: Decodable {
        let iss: String?
        let iat: Int64?
    }

    static func verify(_ token: Substring, keys: ProviderKeyRegistry) -> Result<VerifiedProviderToken, APNsReason> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerData = Data(base64URLEncoded: parts[0]),
            let claimsData = Data(base64URLEncoded: parts[1]),
            let signature = Data(base64URLEncoded: parts[2]),
            let header = try? JSONDecoder().decode(Header.self, from: headerData),
            let claims = try? JSONDecoder().decode(Claims.self, from: claimsData),
            header.alg == "ES256", let keyID = header.kid,
            let teamID = claims.iss, let issuedAt = claims.iat
        else { return .failure(.invalidProviderToken) }
        guard let entry = keys.entry(for: keyID), entry.key.teamID == teamID,
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { return .failure(.invalidProviderToken) }
        let signed = Data(token[..<parts[1].endIndex].utf8)
        guard entry.publicKey.isValidSignature(ecdsa, for: signed) else { return .failure(.invalidProviderToken) }
        return .success(VerifiedProviderToken(keyID: keyID, teamID: teamID, issuedAt: issuedAt, topics: entry.topics))
    }
}

extension Data {
    /// Decodes unpadded base64url (RFC 4648 §5), as JWTs use it.
    init?(base64URLEncoded text: Substring) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        self.init(base64Encoded: base64)
    }
}

/// A configuration or start-up mistake, with what to fix.
public struct APNsSimulatorError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
