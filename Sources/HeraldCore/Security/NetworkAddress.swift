/// Which network addresses a request chosen by a user may reach (docs/security.md, "Webhook
/// endpoints and server-side requests"): public unicast only — not loopback, private, link-local
/// (cloud metadata services live at 169.254.169.254), shared (CGNAT), unique-local, multicast,
/// reserved or unspecified ones.
public enum NetworkAddress {
    /// Whether `text` is an IP address (v4 dotted, or v6, with or without brackets).
    public static func isIPAddress(_ text: String) -> Bool { bytes(of: text) != nil }

    /// The bytes of an IP address (canonical dotted v4, or v6 with or without brackets): four
    /// for IPv4 and for an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, how a dual-stack socket
    /// shows an IPv4 peer), sixteen for any other IPv6 address. Not an address: nil.
    public static func bytes(of text: String) -> [UInt8]? {
        if let v4 = ipv4(text) { return v4 }
        guard let v6 = ipv6(unbracketed(text)) else { return nil }
        if v6[0..<10].allSatisfy({ $0 == 0 }) && v6[10] == 0xFF && v6[11] == 0xFF { return Array(v6[12..<16]) }
        return v6
    }

    /// Whether `host` is a number written as something other than a canonical dotted quad:
    /// `012.0.0.1` (octal, 10.0.0.1 to the resolver), `0x7f.1`, `127.1`, `2130706433`. Such a host
    /// names an address by a form that checks and resolvers read differently, so it is refused
    /// outright rather than interpreted. A name is numeric when its last label is (WHATWG's URL
    /// rule: no top-level domain is a number).
    public static func isNonCanonicalNumericHost(_ host: String) -> Bool {
        guard !host.contains(":") else { return false }  // IPv6, whose tail may be a dotted quad
        var labels = host.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count > 1, labels.last?.isEmpty == true { labels.removeLast() }
        guard let last = labels.last, !last.isEmpty else { return false }
        let lowered = last.lowercased()
        let numeric =
            lowered.allSatisfy({ $0.isASCII && $0.isNumber })
            || (lowered.hasPrefix("0x") && lowered.dropFirst(2).allSatisfy { $0.isASCII && $0.isHexDigit })
        return numeric && ipv4(host) == nil
    }

    /// Whether `text`, an IP address, is a public unicast one. Not an address: false.
    public static func isPublic(_ text: String) -> Bool {
        // IPv4, and IPv4-mapped IPv6 (four bytes here): the IPv4 address decides.
        guard let v6 = bytes(of: text) else { return false }
        if v6.count == 4 { return isPublic(v4: v6) }
        // NAT64 (64:ff9b::a.b.c.d): the IPv4 address decides too.
        if v6[0] == 0x00 && v6[1] == 0x64 && v6[2] == 0xFF && v6[3] == 0x9B && v6[4..<12].allSatisfy({ $0 == 0 }) {
            return isPublic(v4: Array(v6[12..<16]))
        }
        // ::/96: unspecified (::), loopback (::1) and IPv4-compatible (deprecated).
        if v6[0..<12].allSatisfy({ $0 == 0 }) { return false }
        if v6[0] & 0xFE == 0xFC { return false }  // fc00::/7 unique local
        if v6[0] == 0xFE && v6[1] & 0xC0 == 0x80 { return false }  // fe80::/10 link local
        if v6[0] == 0xFF { return false }  // multicast
        if v6[0] == 0x20 && v6[1] == 0x01 && v6[2] == 0x0D && v6[3] == 0xB8 { return false }  // documentation
        if v6[0] == 0x20 && v6[1] == 0x02 { return false }  // 2002::/16 6to4: relays reach the IPv4 inside
        if v6[0] == 0x20 && v6[1] == 0x01 && v6[2] == 0 && v6[3] == 0 { return false }  // 2001::/32 Teredo
        if v6[0] == 0x00 && v6[1] == 0x64 && v6[2] == 0xFF && v6[3] == 0x9B && v6[4] == 0 && v6[5] == 1 {
            return false  // 64:ff9b:1::/48, NAT64 for local use
        }
        return true
    }

    /// Whether `text` is a loopback address (127.0.0.0/8, ::1) or `localhost`.
    public static func isLoopback(_ text: String) -> Bool {
        let host = unbracketed(text.lowercased())
        if host == "localhost" { return true }
        if let v4 = ipv4(host) { return v4[0] == 127 }
        if let v6 = ipv6(host) { return v6[0..<15].allSatisfy { $0 == 0 } && v6[15] == 1 }
        return false
    }

    static func isPublic(v4: [UInt8]) -> Bool {
        let (a, b, c) = (v4[0], v4[1], v4[2])
        switch a {
        case 0, 10, 127: return false
        case 100 where b & 0xC0 == 64: return false  // 100.64.0.0/10 shared (CGNAT)
        case 169 where b == 254: return false  // link local, cloud metadata
        case 172 where b & 0xF0 == 16: return false  // 172.16.0.0/12
        case 192 where b == 168: return false
        case 192 where b == 0 && (c == 0 || c == 2): return false  // protocol assignments, documentation
        case 198 where b & 0xFE == 18: return false  // 198.18.0.0/15 benchmarking
        case 198 where b == 51 && c == 100, 203 where b == 0 && c == 113: return false  // documentation
        case 224...255: return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    static func unbracketed(_ text: String) -> String {
        text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
    }

    /// Four bytes of a canonical dotted IPv4 address: four decimal parts, none with a leading
    /// zero (`012` is octal to the C resolver, so it is not read as twelve here).
    static func ipv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), part.count == 1 || part.first != "0",
                let value = UInt8(part)
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    /// Sixteen bytes of an IPv6 address (with `::`, and a dotted IPv4 tail).
    static func ipv6(_ text: String) -> [UInt8]? {
        guard text.contains(":"), !text.contains("%") else { return nil }
        var text = Substring(text)
        var tail: [UInt8] = []
        if let lastColon = text.lastIndex(of: ":"), let v4 = ipv4(String(text[text.index(after: lastColon)...])) {
            tail = v4
            text = text[...lastColon]
            if text.hasSuffix(":") && !text.hasSuffix("::") { text = text.dropLast() }
        }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ half: String) -> [UInt16]? {
            guard !half.isEmpty else { return [] }
            var result: [UInt16] = []
            for group in half.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(group.count), let value = UInt16(group, radix: 16) else { return nil }
                result.append(value)
            }
            return result
        }
        guard let head = groups(halves[0]) else { return nil }
        let rest = halves.count == 2 ? groups(halves[1]) : []
        guard let rest else { return nil }
        let total = head.count + rest.count + tail.count / 2
        guard halves.count == 2 ? total < 8 : total == 8 else { return nil }
        var words = head + [UInt16](repeating: 0, count: 8 - total) + rest
        if halves.count == 1 { words = head }
        var bytes = words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        bytes += tail
        return bytes.count == 16 ? bytes : nil
    }
}
