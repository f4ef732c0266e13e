import Crypto
import HeraldAPNsVocabulary
import HeraldCore

/// The `Herald-Signature` header of a webhook request: `t=<unix seconds>,v1=<hex>` where the hex
/// is HMAC-SHA256 of `"<t>.<body>"` under the endpoint's secret; during a secret rotation's grace
/// period one `v1=` per secret still signing. A receiver recomputes it with its secret, compares in
/// constant time, and refuses timestamps too far from its clock (replays).
public enum WebhookSignature {
    public static let headerName = "Herald-Signature"

    /// The header for `body` sent at `timestamp`, signed with each of `secrets`.
    public static func header(body: [UInt8], timestamp: Int64, secrets: [[UInt8]]) -> String {
        (["t=\(timestamp)"]
            + secrets.map { "v1=" + Hexadecimal.encode(code(body: body, timestamp: timestamp, secret: $0)) })
            .joined(separator: ",")
    }

    /// Whether `header` carries a valid signature of `body` under `secret`, with a timestamp within
    /// `tolerance` seconds of `now`.
    public static func verify(header: String, body: [UInt8], secret: [UInt8], now: Int64, tolerance: Int64 = 300)
        -> Bool
    {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            switch pair[0] {
            case "t": timestamp = Int64(pair[1])
            case "v1": signatures.append(String(pair[1]))
            default: continue
            }
        }
        guard let timestamp, abs(now - timestamp) <= tolerance else { return false }
        let expected = Hexadecimal.encode(code(body: body, timestamp: timestamp, secret: secret))
        return signatures.contains { SecretHasher.matches($0, expected) }
    }

    static func code(body: [UInt8], timestamp: Int64, secret: [UInt8]) -> [UInt8] {
        var signed = Array("\(timestamp).".utf8)
        signed += body
        return Array(HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: secret)))
    }
}
