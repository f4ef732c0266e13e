import HeraldTiming

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How an ``APNsClient`` uses its connections.
public struct APNsClientConfiguration: Sendable {
    /// Connections to open to the endpoint.
    public var connections = 2
    /// Notifications in flight at most, over all connections; `send` waits when it is reached.
    public var maxInFlight = 2000
    /// Each request's deadline.
    public var requestTimeout: Duration = .seconds(10)
    /// Deadline for TCP, TLS and the server's first SETTINGS.
    public var connectTimeout: Duration = .seconds(10)
    /// Connections are opened this far apart.
    public var connectionSpacing: Duration = .milliseconds(100)
    /// Waits between failed connection attempts of one connection slot.
    public var reconnectBackoff = Backoff(initial: .milliseconds(100), maximum: .seconds(30))
    /// A connection with nothing in flight for this long is PINGed; one that does not answer
    /// within `requestTimeout` is closed and reopened.
    public var idlePingInterval: Duration = .seconds(60)
    /// Times a request APNs did not process (GOAWAY, REFUSED_STREAM) is sent again.
    public var unprocessedResends = 3
    /// When provider tokens are renewed.
    public var tokenPolicy = APNsProviderTokenPolicy()

    public init() {}
}

/// Seconds since 1970, injectable so that token renewal can be tested without waiting an hour.
public struct APNsClock: Sendable {
    public var secondsSince1970: @Sendable () -> Int64

    public init(secondsSince1970: @escaping @Sendable () -> Int64) {
        self.secondsSince1970 = secondsSince1970
    }

    public static let system = APNsClock { Int64(time(nil)) }
}
