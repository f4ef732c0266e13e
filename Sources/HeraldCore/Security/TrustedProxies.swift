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
public struct TrustedProxies: Sendable, Equatable {
    /// An address range in CIDR form (`10.0.0.0/8`, `fd00::/8`; a bare address is a single host).
    public struct Network: Sendable, Equatable, CustomStringConvertible {
        let bytes: [UInt8]
        let prefixLength: Int

        /// - Returns: nil for text that is not an address or `address/prefix`.
        public init?(_ text: Substring) {
            let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let address = TrustedProxies.bytes(of: String(parts[0])) else { return nil }
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

        public var description: String {
            let address =
                bytes.count == 4
                ? bytes.map(String.init).joined(separator: ".")
                : stride(from: 0, to: 16, by: 2).map {
                    String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
                }
                .joined(separator: ":")
            return "\(address)/\(prefixLength)"
        }
    }

    public let networks: [Network]

    public init(networks: [Network] = []) { self.networks = networks }

    /// Reads a comma-separated list of ranges.
    /// - Throws: ``SettingError`` naming the entry that is not an address or range.
    public init(parsing text: String, setting: String = "HERALD_API_TRUSTED_PROXIES") throws(SettingError) {
        var networks: [Network] = []
        for entry in text.split(separator: ",") {
            let trimmed = entry.trimmingBlanks()
            guard !trimmed.isEmpty else { continue }
            guard let network = Network(trimmed) else {
                throw SettingError(
                    "\(setting): \"\(trimmed)\" is not an IP address or a CIDR range (write e.g. 10.0.0.0/8 or fd00::/8)"
                )
            }
            networks.append(network)
        }
        self.networks = networks
    }

    /// Whether `address` (text) is one of the trusted proxies.
    public func trusts(_ address: String) -> Bool {
        guard let bytes = Self.bytes(of: address) else { return false }
        return networks.contains { $0.contains(bytes) }
    }

    /// The address a request is counted under.
    /// - Parameters:
    ///   - peer: the connection's remote address (nil: not known).
    ///   - forwardedFor: every `X-Forwarded-For` field of the request, in order.
    public func clientAddress(peer: String?, forwardedFor: [Substring]) -> String {
        guard let peer else { return "unknown" }
        guard !networks.isEmpty, trusts(peer) else { return peer }
        var client = peer
        for field in forwardedFor.reversed() {
            for hop in field.split(separator: ",").reversed() {
                let address = String(hop.trimmingBlanks())
                // A hop that is not an address ends the walk: what lies left of it is not known
                // to come from a proxy, so the last trusted hop is the client.
                guard Self.bytes(of: address) != nil else { return client }
                client = address
                if !trusts(address) { return client }
            }
        }
        return client
    }

    /// The bytes of an IPv4 (canonical dotted) or IPv6 address, with or without brackets; an
    /// IPv4-mapped IPv6 address (`::ffff:10.0.0.5`, how a dual-stack listener sees an IPv4 peer)
    /// as its four IPv4 bytes, so IPv4 ranges match it.
    static func bytes(of text: String) -> [UInt8]? {
        if let v4 = NetworkAddress.ipv4(text) { return v4 }
        guard let v6 = NetworkAddress.ipv6(NetworkAddress.unbracketed(text)) else { return nil }
        if v6[0..<10].allSatisfy({ $0 == 0 }) && v6[10] == 0xFF && v6[11] == 0xFF { return Array(v6[12..<16]) }
        return v6
    }
}

extension Substring {
    fileprivate func trimmingBlanks() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
