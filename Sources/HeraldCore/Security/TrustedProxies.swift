/// The load balancers and proxies whose `X-Forwarded-For` herald-api believes
/// (`HERALD_API_TRUSTED_PROXIES`), and the client address a request is counted under.
///
/// Behind a load balancer every request arrives from the balancer's address, so the per-source
/// throttles (failed authentications, console sign-ins) would count every client as one. With
/// the balancer's networks listed here, a request whose peer is one of them is counted under the
/// address the balancer appended to `X-Forwarded-For`: the header is read from its right end,
/// past every hop that is itself a trusted proxy, and the first address that is not is the
/// client. The header of a request from any other peer is ignored (anyone can write it).
/// Empty (the default): the peer's address, always.
public struct TrustedProxies: Sendable {
    /// An address range in CIDR form (`10.0.0.0/8`, `fd00::/8`; a bare address is a single host).
    public struct Network: Sendable {
        let bytes: [UInt8]
        let prefixLength: Int

        /// - Returns: nil for text that is not an address or `address/prefix`.
        public init?(_ text: Substring) {
            let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let address = NetworkAddress.bytes(of: String(parts[0])) else { return nil }
            let bits = address.count * 8
            var prefixLength = bits
            if parts.count == 2 {
                guard parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(parts[1]),
                    (0...bits).contains(value)
                else {
                    return nil
                }
                prefixLength = value
            }
            self.bytes = address
            self.prefixLength = prefixLength
        }

        /// Whether `address` (4 or 16 bytes) lies in this range; an IPv4 address never lies in
        /// an IPv6 range or the other way round.
        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var remaining = prefixLength
            for index in bytes.indices where remaining > 0 {
                let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
                guard address[index] & mask == bytes[index] & mask else { return false }
                remaining -= 8
            }
            return true
        }
    }

    public let networks: [Network]

    public init(networks: [Network] = []) { self.networks = networks }

    /// Reads a comma-separated list of ranges.
    /// - Throws: ``SettingError`` naming the entry that is not an address or range.
    public init(parsing text: String) throws(SettingError) {
        var networks: [Network] = []
        for entry in text.split(separator: ",") {
            let trimmed = entry.trimmingWhitespace()
            guard !trimmed.isEmpty else { continue }
            guard let network = Network(trimmed) else {
                throw SettingError(
                    "HERALD_API_TRUSTED_PROXIES: \"\(trimmed)\" is not an IP address or a CIDR range (write e.g. 10.0.0.0/8 or fd00::/8)"
                )
            }
            networks.append(network)
        }
        self.networks = networks
    }

    /// Whether `address` (text) is one of the trusted proxies.
    public func trusts(_ address: String) -> Bool {
        NetworkAddress.bytes(of: address).map(trusts(bytes:)) ?? false
    }

    private func trusts(bytes: [UInt8]) -> Bool { networks.contains { $0.contains(bytes) } }

    /// The address a request is counted under.
    /// - Parameters:
    ///   - peer: the connection's remote address (nil: not known).
    ///   - forwardedFor: every `X-Forwarded-For` field of the request, in order.
    public func clientAddress(peer: String?, forwardedFor: [Substring]) -> String {
        guard let peer else { return "unknown" }
        guard trusts(peer) else { return peer }
        var client = peer
        for field in forwardedFor.reversed() {
            for hop in field.split(separator: ",").reversed() {
                let address = String(hop.trimmingWhitespace())
                // A hop that is not an address ends the walk: what lies left of it is not known
                // to come from a proxy, so the last trusted hop is the client.
                guard let bytes = NetworkAddress.bytes(of: address) else { return client }
                client = address
                if !trusts(bytes: bytes) { return client }
            }
        }
        return client
    }
}
