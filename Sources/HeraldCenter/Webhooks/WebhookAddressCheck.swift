import Foundation
import HeraldCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Refuses webhook requests to addresses that are not public (docs/security.md): an app admin
/// chooses the URL, and must not make herald-center POST into the network it runs in — its own
/// loopback, private ranges, the cloud's metadata service. The host is resolved just before each
/// request; a name that resolves to any address that is not public is refused.
///
/// - Important: the HTTP client resolves the name again when it connects: a DNS answer that
///   changes in between (rebinding) is not caught here. Restrict the centers' egress as well.
enum WebhookAddressCheck {
    /// Why a request to `url` is refused, or nil when every address of its host is public.
    static func refusal(url: String) async -> String? {
        guard let host = URLComponents(string: url)?.host, !host.isEmpty else { return "the URL has no host" }
        if NetworkAddress.isNonCanonicalNumericHost(host) {
            return "refused: \(host) is a number, not a dotted-quad address or a name; write the address as a.b.c.d"
        }
        if NetworkAddress.isIPAddress(host) {
            return NetworkAddress.isPublic(host) ? nil : Self.message(host: host, address: host)
        }
        let addresses: [String]
        do {
            addresses = try await NIOThreadPool.singleton.runIfActive { try Self.resolve(host) }
        } catch {
            return "cannot resolve \(host): \(error)"
        }
        if let address = addresses.first(where: { !NetworkAddress.isPublic($0) }) {
            return message(host: host, address: address)
        }
        return addresses.isEmpty ? "\(host) resolves to no address" : nil
    }

    static func message(host: String, address: String) -> String {
        "refused: \(host) is \(address), not a public address (HERALD_CENTER_WEBHOOK_PRIVATE_NETWORKS=allow lets this center reach private networks)"
    }

    struct ResolutionFailed: Error, CustomStringConvertible {
        var description: String
    }

    /// Every address `host` resolves to, as text (blocking: run on a thread pool).
    static func resolve(_ host: String) throws -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else { throw ResolutionFailed(description: String(cString: gai_strerror(status))) }
        // `list` is ours until freeaddrinfo, below; each entry's address is read within the loop.
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var entry = list
        while let current = entry {
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(
                current.pointee.ai_addr, current.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0,
                NI_NUMERICHOST) == 0
            {
                addresses.append(String(cString: buffer))
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }
}
