import HeraldCore
import Testing

/// Which addresses a user-chosen URL (a webhook endpoint) may reach: public unicast only.
@Suite("network addresses")
struct NetworkAddressTests {
    @Test(
        "loopback, private, link-local (cloud metadata), shared, unique-local, multicast and reserved addresses are not public; mapped IPv4 is judged as IPv4",
        arguments: [
            "127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
            "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "198.18.0.1", "192.0.2.1", "::1", "[::1]", "::",
            "fe80::1", "fd00::1", "fc12:3456::1", "ff02::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1",
            "64:ff9b::192.168.0.1", "2001:db8::1", "::10.0.0.1", "::8.8.8.8", "2002:c0a8:0101::1",
            "2001:0:4136:e378::1",
            "64:ff9b:1::8.8.8.8",
        ])
    func notPublic(_ address: String) {
        #expect(NetworkAddress.isIPAddress(address), "\(address) is an address")
        #expect(!NetworkAddress.isPublic(address), "\(address) is not public")
    }

    @Test(
        "public unicast addresses are",
        arguments: [
            "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "169.253.0.1", "192.169.0.1", "2606:4700::1111",
            "::ffff:8.8.8.8", "2a00:1450:4001:80b::200e",
        ])
    func isPublic(_ address: String) {
        #expect(NetworkAddress.isPublic(address), "\(address) is public")
    }

    @Test("names and malformed text are not addresses; loopback names are loopback")
    func names() {
        for text in [
            "example.com", "localhost", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1:2:3:4:5:6:7:8:9", "::1::", "fe80::1%eth0",
        ] {
            #expect(!NetworkAddress.isIPAddress(text), "\(text)")
            #expect(!NetworkAddress.isPublic(text), "\(text)")
        }
        #expect(NetworkAddress.isLoopback("localhost") && NetworkAddress.isLoopback("127.0.0.1"))
        #expect(NetworkAddress.isLoopback("[::1]") && !NetworkAddress.isLoopback("10.0.0.1"))
    }

    @Test(
        "a host that is a number in any form but a canonical dotted quad is not an address, and is refused as non-canonical",
        arguments: [
            "012.0.0.1", "0x7f.0.0.1", "127.1", "2130706433", "0177.0.0.01", "10.0.0.010", "0x7F000001", "1.2.3.4.",
        ])
    func nonCanonicalNumbers(_ host: String) {
        #expect(!NetworkAddress.isIPAddress(host), "\(host)")
        #expect(!NetworkAddress.isPublic(host), "\(host)")
        #expect(NetworkAddress.isNonCanonicalNumericHost(host), "\(host)")
    }

    @Test("names, canonical addresses and names ending in a letter label are not refused as numeric")
    func canonicalHosts() {
        for host in [
            "8.8.8.8", "10.0.0.1", "0.0.0.0", "example.com", "1e100.net", "0x.example", "123.example.org", "api",
            "::ffff:8.8.8.8", "64:ff9b::8.8.8.8",
        ] {
            #expect(!NetworkAddress.isNonCanonicalNumericHost(host), "\(host)")
        }
    }
}
