import NIOHTTP1

extension HTTPRequestHead {
    /// The request target without its query: what Herald's small NIO servers route on.
    public var path: String {
        uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
    }
}
