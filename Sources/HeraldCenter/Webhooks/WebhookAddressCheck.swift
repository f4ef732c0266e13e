import Foundation
import HeraldCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Decides where a webhook request may go (docs/security.md): an app admin chooses the URL, and
/// must not make herald-center POST into the network it runs in — its own loopback, private
/// ranges, the cloud's metadata service. The host is resolved just before each request; a name
/// that resolves to any address that is not public is refused, and otherwise the request
/// connects to the very address that was checked (the HTTP client does not resolve the name
/// again), so a DNS answer that changes between the check and the connection (rebinding) cannot
/// lead it elsewhere. TLS still verifies the certificate for the name.
enum WebhookAddressCheck {
    enum Decision: Equatable, Sendable {
        /// Connect to `address`, the one checked; nil when the URL's host is an address itself.
        case connect(host: String, address: String?)
        /// Not sent. `tenant` goes to the app's attempt log (what to fix, never an address the
        /// name resolved to); `operator` to herald-center's log.
        case refused(tenant: String, operator: String)
    }

    /// Every address a host name resolves to, as text.
    typealias Resolver = @Sendable (_ host: String) async throws -> [String]

    /// The system's resolver (getaddrinfo), on NIO's thread pool.
    static let systemResolver: Resolver = { host in
        try await NIOThreadPool.singleton.runIfActive { try resolve(host) }
    }

    /// Where a request to `url` goes, or why it does not.
    ///
    /// - Parameter allowPrivateNetworks: addresses that are not public are allowed (still
    ///   resolved once and connected to as checked).
    static func decide(url: String, allowPrivateNetworks: Bool, resolver: Resolver) async -> Decision {
        // The host as the HTTP client reads it (Foundation's URL): the address it is told to use is
        // looked up under this name, so a parser that read the URL otherwise could not bypass it.
        guard let host = URL(string: url)?.host, !host.isEmpty else {
            return .refused(tenant: "the URL has no host", operator: "the URL has no host")
        }
        if NetworkAddress.isNonCanonicalNumericHost(host) {
            let reason =
                "refused: \(host) is a number, not a dotted-quad address or a name; write the address as a.b.c.d"
            return .refused(tenant: reason, operator: reason)
        }
        if NetworkAddress.isIPAddress(host) {
            if allowPrivateNetworks || NetworkAddress.isPublic(host) { return .connect(host: host, address: nil) }
            return .refused(
                tenant: "refused: \(host) is not a public address", operator: message(host: host, address: host))
        }
        let addresses: [String]
        do {
            addresses = try await resolver(host)
        } catch {
            return .refused(tenant: "cannot resolve \(host)", operator: "cannot resolve \(host): \(error)")
        }
        if !allowPrivateNetworks, let address = addresses.first(where: { !NetworkAddress.isPublic($0) }) {
            return .refused(
                tenant: "refused: \(host) resolves to an address that is not public",
                operator: message(host: host, address: address))
        }
        // IPv4 first: a center without an IPv6 route still reaches a dual-stack endpoint.
        guard let address = addresses.first(where: { !$0.contains(":") }) ?? addresses.first else {
            return .refused(tenant: "\(host) resolves to no address", operator: "\(host) resolves to no address")
        }
        return .connect(host: host, address: address)
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
