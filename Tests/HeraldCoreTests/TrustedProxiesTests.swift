import HeraldCore
import Testing

/// Which address a request is counted under behind load balancers (HERALD_API_TRUSTED_PROXIES).
@Suite("trusted proxies")
struct TrustedProxiesTests {
    static let proxies = try! TrustedProxies(parsing: "10.0.0.0/8, 192.168.1.7 ,fd00::/8")

    @Test("a peer that is not trusted is the client, whatever X-Forwarded-For claims")
    func untrustedPeer() {
        #expect(Self.proxies.clientAddress(peer: "203.0.113.9", forwardedFor: ["1.2.3.4"]) == "203.0.113.9")
        #expect(TrustedProxies().clientAddress(peer: "10.0.0.1", forwardedFor: ["1.2.3.4"]) == "10.0.0.1")
        #expect(Self.proxies.clientAddress(peer: nil, forwardedFor: ["1.2.3.4"]) == "unknown")
    }

    @Test("behind trusted proxies the rightmost address that is not one of them is the client")
    func rightmostUntrusted() {
        let client = { (fields: [Substring]) in Self.proxies.clientAddress(peer: "10.1.2.3", forwardedFor: fields) }
        #expect(client(["203.0.113.5"]) == "203.0.113.5")
        // A forged left part does not matter: the proxy appended the real peer at the right.
        #expect(client(["6.6.6.6, 203.0.113.5"]) == "203.0.113.5")
        #expect(client(["6.6.6.6, 203.0.113.5, 192.168.1.7"]) == "203.0.113.5")
        // Several fields are one list, in order.
        #expect(client(["6.6.6.6", "203.0.113.5, 10.9.9.9"]) == "203.0.113.5")
        #expect(client(["2001:db8::5, fd00::1"]) == "2001:db8::5")
        // No header, or only trusted hops: the leftmost trusted hop (the proxy itself at worst).
        #expect(client([]) == "10.1.2.3")
        #expect(client(["10.4.4.4, 192.168.1.7"]) == "10.4.4.4")
        // A hop that is not an address ends the walk at the last trusted hop.
        #expect(client(["203.0.113.5, unknown, 10.2.2.2"]) == "10.2.2.2")
    }

    @Test("ranges: prefixes are honoured bit by bit; IPv4 never matches an IPv6 range")
    func ranges() throws {
        // A dual-stack listener sees an IPv4 peer as ::ffff:a.b.c.d: IPv4 ranges match it.
        #expect(Self.proxies.clientAddress(peer: "::ffff:10.0.0.5", forwardedFor: ["203.0.113.5"]) == "203.0.113.5")
        let proxies = try TrustedProxies(parsing: "172.16.0.0/12,2001:db8::/32")
        #expect(proxies.trusts("172.31.255.255") && !proxies.trusts("172.32.0.0") && !proxies.trusts("172.15.0.1"))
        #expect(!proxies.trusts("10.0.0.1"))
        #expect(try TrustedProxies(parsing: "0.0.0.0/0").trusts("8.8.8.8"))
        #expect(try TrustedProxies(parsing: "").networks.isEmpty)
        #expect(try TrustedProxies(parsing: " , ").networks.isEmpty)
    }

    @Test(
        "an entry that is not an address or a range is refused with its name",
        arguments: [
            "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/+8", "lb.internal", "010.0.0.0/8", "fd00::/129", "10.0.0.0/8/1",
        ])
    func malformed(_ text: String) {
        #expect {
            try TrustedProxies(parsing: "127.0.0.1, \(text)")
        } throws: { error in
            "\(error)".contains("HERALD_API_TRUSTED_PROXIES") && "\(error)".contains(text)
        }
    }
}
