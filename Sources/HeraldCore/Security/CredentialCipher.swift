import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encrypts APNs private keys and certificates at rest with AES-256-GCM under the master key.
///
/// The sealed form is nonce ‖ ciphertext ‖ tag. What the secret belongs to (its app, row,
/// environment and kind) and the id of the master key that sealed it are bound in as
/// authenticated data by the caller, so sealed bytes copied to another row, or relabelled, do not
/// open.
///
/// A cipher holds one master key that seals (`HERALD_MASTER_KEY`) and any number that only open
/// (`HERALD_MASTER_KEY_DECRYPT_ONLY`), each known by its ``keyID(ofMasterKey:)``: that is how a
/// master key is rotated without downtime (docs/operations.md).
public struct CredentialCipher: Sendable {
    /// The master key was missing or not 32 bytes of base64.
    public struct InvalidMasterKey: Error, CustomStringConvertible {
        public var variable = "HERALD_MASTER_KEY"
        public var description: String {
            "\(variable) must be 32 random bytes in base64 (for example: head -c 32 /dev/urandom | base64)"
        }
    }

    /// A sealed secret did not open: sealed with a master key this cipher does not hold, or the
    /// data was altered.
    public struct CannotOpen: Error, CustomStringConvertible {
        /// The id of the master key it was sealed with, when known.
        public var sealingKeyID: String?
        public var description: String {
            if let sealingKeyID {
                return
                    "a stored credential sealed with master key \(sealingKeyID) could not be decrypted: that key is not configured (HERALD_MASTER_KEY, HERALD_MASTER_KEY_DECRYPT_ONLY), or the row was altered"
            }
            return
                "a stored credential could not be decrypted: HERALD_MASTER_KEY differs from the one it was stored with, or the row was altered"
        }
    }

    /// The key that seals, with its id.
    private let sealing: (id: String, key: SymmetricKey)
    /// Every key that opens (the sealing key first), by id.
    private let opening: [(id: String, key: SymmetricKey)]

    /// - Parameters:
    ///   - masterKeyBase64: 32 bytes in base64: seals and opens.
    ///   - decryptOnlyBase64: more such keys that only open (a master key being rotated out, or
    ///     in).
    /// - Throws: ``InvalidMasterKey``.
    public init(masterKeyBase64: String, decryptOnlyBase64: [String] = []) throws {
        func key(_ text: String, variable: String) throws -> (id: String, key: SymmetricKey) {
            guard let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespaces)), bytes.count == 32 else {
                var error = InvalidMasterKey()
                error.variable = variable
                throw error
            }
            let key = SymmetricKey(data: bytes)
            return (Self.keyID(ofMasterKey: key), key)
        }
        sealing = try key(masterKeyBase64, variable: "HERALD_MASTER_KEY")
        var opening = [sealing]
        for text in decryptOnlyBase64 {
            let other = try key(text, variable: "HERALD_MASTER_KEY_DECRYPT_ONLY")
            if !opening.contains(where: { $0.id == other.id }) { opening.append(other) }
        }
        self.opening = opening
    }

    /// The id of the key that seals.
    public var sealingKeyID: String { sealing.id }
    /// The ids of every key that opens, the sealing key's first.
    public var keyIDs: [String] { opening.map(\.id) }

    /// A master key's public name: the first 8 bytes of HMAC-SHA256(key, "herald master key id"),
    /// in hexadecimal. It tells keys apart and says which one sealed a secret, and reveals nothing
    /// of the key.
    public static func keyID(ofMasterKey key: SymmetricKey) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Array("herald master key id".utf8), using: key)
        return code.prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// Encrypts `secret` with the sealing key, authenticating `associatedData(sealingKeyID)`.
    /// - Returns: the sealed bytes and the id of the key that sealed them (store both).
    public func seal(_ secret: [UInt8], associatedData: (String) -> [UInt8]) throws -> (
        sealed: [UInt8], keyID: String
    ) {
        let box = try AES.GCM.seal(secret, using: sealing.key, authenticating: associatedData(sealing.id))
        guard let combined = box.combined else { throw CannotOpen(sealingKeyID: sealing.id) }
        return (Array(combined), sealing.id)
    }

    /// Decrypts what ``seal(_:associatedData:)`` made with the key `keyID`, for the same
    /// associated data.
    /// - Throws: ``CannotOpen``: this cipher does not hold key `keyID`, or the bytes or the
    ///   associated data differ.
    public func open(_ sealed: [UInt8], keyID: String, associatedData: [UInt8]) throws(CannotOpen) -> [UInt8] {
        guard let key = opening.first(where: { $0.id == keyID })?.key,
            let opened = try? Self.open(sealed, key: key, associatedData: associatedData)
        else { throw CannotOpen(sealingKeyID: keyID) }
        return opened
    }

    /// Decrypts bytes sealed before sealed secrets carried their key's id: every key this cipher
    /// holds is tried.
    /// - Throws: ``CannotOpen`` when none opens them.
    public func openWithAnyKey(_ sealed: [UInt8], associatedData: [UInt8]) throws(CannotOpen) -> [UInt8] {
        for (_, key) in opening {
            if let opened = try? Self.open(sealed, key: key, associatedData: associatedData) { return opened }
        }
        throw CannotOpen(sealingKeyID: nil)
    }

    private static func open(_ sealed: [UInt8], key: SymmetricKey, associatedData: [UInt8]) throws -> [UInt8] {
        let box = try AES.GCM.SealedBox(combined: sealed)
        return Array(try AES.GCM.open(box, using: key, authenticating: associatedData))
    }
}
