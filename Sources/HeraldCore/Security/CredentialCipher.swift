import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encrypts APNs private keys and certificates at rest with AES-256-GCM under the master key.
///
/// The sealed form is nonce ‖ ciphertext ‖ tag. The credential's owner (its app id and
/// credential id) is bound in as authenticated data, so a sealed key copied to another row does
/// not open.
public struct CredentialCipher: Sendable {
    /// The master key was missing or not 32 bytes of base64.
    public struct InvalidMasterKey: Error, CustomStringConvertible {
        public var description: String {
            "HERALD_MASTER_KEY must be 32 random bytes in base64 (for example: head -c 32 /dev/urandom | base64)"
        }
    }

    /// A sealed secret did not open: wrong master key, or the data was altered.
    public struct CannotOpen: Error, CustomStringConvertible {
        public var description: String {
            "a stored credential could not be decrypted: HERALD_MASTER_KEY differs from the one it was stored with, or the row was altered"
        }
    }

    private let key: SymmetricKey

    /// - Parameter masterKeyBase64: 32 bytes in base64.
    /// - Throws: ``InvalidMasterKey``.
    public init(masterKeyBase64: String) throws {
        guard let bytes = Data(base64Encoded: masterKeyBase64), bytes.count == 32 else {
            throw InvalidMasterKey()
        }
        key = SymmetricKey(data: bytes)
    }

    /// Encrypts `secret`, binding it to `owner`.
    public func seal(_ secret: [UInt8], owner: String) throws -> [UInt8] {
        let box = try AES.GCM.seal(secret, using: key, authenticating: Array(owner.utf8))
        guard let combined = box.combined else { throw CannotOpen() }
        return Array(combined)
    }

    /// Decrypts what ``seal(_:owner:)`` made for the same `owner`.
    /// - Throws: ``CannotOpen``.
    public func open(_ sealed: [UInt8], owner: String) throws -> [UInt8] {
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            return Array(try AES.GCM.open(box, using: key, authenticating: Array(owner.utf8)))
        } catch {
            throw CannotOpen()
        }
    }
}
