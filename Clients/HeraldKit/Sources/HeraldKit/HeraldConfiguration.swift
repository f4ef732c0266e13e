import Foundation

/// What an app tells HeraldKit: where Herald is and who the app is.
public struct HeraldConfiguration: Sendable {
    /// herald-api's base URL (`https://push.example.com`).
    public var apiURL: URL
    /// The app's client key (`hk_client_…`): safe to ship in the app, it can only register its
    /// own device and report its own events (docs/security.md).
    public var clientKey: String
    /// herald-gateway's address; nil: no long connection, APNs only.
    public var gateway: GatewayEndpoint?
    /// `production` for App Store and TestFlight builds, `sandbox` for development builds.
    public var environment: String
    /// Names the client in the gateway's logs.
    public var agent: String
    /// The most engagement events kept while offline.
    public var engagementCapacity: Int
    /// The push ids remembered to show each push once.
    public var shownPushesCapacity: Int

    public init(
        apiURL: URL, clientKey: String, gateway: GatewayEndpoint? = nil, environment: String = "production",
        agent: String = "HeraldKit/1", engagementCapacity: Int = 5_000, shownPushesCapacity: Int = 1_000
    ) {
        self.apiURL = apiURL
        self.clientKey = clientKey
        self.gateway = gateway
        self.environment = environment
        self.agent = agent
        self.engagementCapacity = engagementCapacity
        self.shownPushesCapacity = shownPushesCapacity
    }
}
