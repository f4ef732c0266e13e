import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The simulator's admin endpoint: plain HTTP/1.1 with JSON, for tests, the demo and operators.
///
/// | route | what it does |
/// |---|---|
/// | `GET /health` | `{"status":"ok"}` |
/// | `GET /stats` | counters by status, reason and topic; connections |
/// | `GET /metrics` | the same counters in Prometheus text format |
/// | `GET /notifications[?token=HEX][&after=N][&limit=M]` | accepted notifications as NDJSON, oldest first (M of them after the first N) |
/// | `POST /reset` | forget notifications and counters |
/// | `GET /faults`, `PUT /faults` | read or replace the faults in force |
/// | `POST /devices` | add devices: `{"devices":[{"token","topic","unregisteredAt"?}]}` |
/// | `POST /keys` | trust a key: `{"keyID","teamID","publicKeyPEM","topics":[…]}` |
final class APNsAdminServer: Sendable {
    private let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    var port: Int { channel.localAddress?.port ?? 0 }

    static func start(host: String, port: Int, state: APNsSimulatorState, group: any EventLoopGroup) async throws
        -> APNsAdminServer
    {
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(APNsAdminHandler(state: state))
                }
            }
            .bind(host: host, port: port).get()
        return APNsAdminServer(channel: channel)
    }

    func close() async { try? await channel.close() }
}

private final class APNsAdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: APNsSimulatorState
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()

    init(state: APNsSimulatorState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
        case .body(var chunk):
            if body.readableBytes < 64 << 20 { body.writeBuffer(&chunk) }
        case .end:
            guard let head else { return }
            let (status, contentType, text) = route(head, body: Data(body.readableBytesView))
            var headers = HTTPHeaders([("content-type", contentType), ("content-length", "\(text.utf8.count)")])
            if !head.isKeepAlive { headers.add(name: "connection", value: "close") }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
            let keepAlive = head.isKeepAlive
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                if !keepAlive { context.close(promise: nil) }
            }
            self.head = nil
        }
    }

    private func route(_ head: HTTPRequestHead, body: Data) -> (HTTPResponseStatus, String, String) {
        let components = URLComponents(string: head.uri)
        let path = components?.path ?? head.uri
        let query = components?.queryItems ?? []
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func json(_ value: some Encodable) -> (HTTPResponseStatus, String, String) {
            (.ok, "application/json", String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self))
        }
        func problem(_ status: HTTPResponseStatus, _ code: String, _ message: String) -> (
            HTTPResponseStatus, String, String
        ) {
            let text = String(
                decoding: (try? encoder.encode(["error": ["code": code, "message": message]])) ?? Data(), as: UTF8.self)
            return (status, "application/json", text)
        }
        switch (head.method, path) {
        case (.GET, "/health"):
            return json(["status": "ok"])
        case (.GET, "/stats"):
            return json(state.ledger.counts)
        case (.GET, "/metrics"):
            return (.ok, "text/plain; version=0.0.4", state.ledger.prometheusText())
        case (.GET, "/notifications"):
            let token = query.first { $0.name == "token" }?.value
            var after = 0
            var limit = Int.max
            if let text = query.first(where: { $0.name == "after" })?.value {
                guard let number = Int(text), number >= 0 else {
                    return problem(
                        .badRequest, "bad_after", "after must be a whole number ≥ 0 (how many notifications to skip)")
                }
                after = number
            }
            if let text = query.first(where: { $0.name == "limit" })?.value {
                guard let number = Int(text), number > 0 else {
                    return problem(
                        .badRequest, "bad_limit", "limit must be a whole number ≥ 1 (how many notifications to read)")
                }
                limit = number
            }
            let lines = state.ledger.notifications(token: token, after: after, limit: limit).compactMap {
                try? encoder.encode($0)
            }
            return (.ok, "application/x-ndjson", lines.map { String(decoding: $0, as: UTF8.self) + "\n" }.joined())
        case (.POST, "/reset"):
            state.ledger.reset()
            return json(["status": "reset"])
        case (.GET, "/faults"):
            return json(state.faults)
        case (.PUT, "/faults"):
            do {
                state.faults = try JSONDecoder().decode(APNsFaults.self, from: body)
                return json(state.faults)
            } catch let error as APNsSimulatorError {
                return problem(.badRequest, "invalid_faults", error.description)
            } catch {
                return problem(
                    .badRequest, "invalid_json",
                    "the body must be a JSON object of faults (see docs/apns-sim.md): \(error)")
            }
        case (.POST, "/devices"):
            struct Devices: Decodable { let devices: [SimulatedDevice] }
            guard let devices = try? JSONDecoder().decode(Devices.self, from: body) else {
                return problem(
                    .badRequest, "invalid_json",
                    #"the body must be {"devices":[{"token":"<hex>","topic":"<bundle id>","unregisteredAt":<ms, optional>}]}"#
                )
            }
            if let bad = devices.devices.first(where: { APNsRequestRules.deviceToken(fromPathText: $0.token) == nil }) {
                return problem(.badRequest, "invalid_token", "device token \(bad.token) is not hex of even length")
            }
            state.devices.add(devices.devices)
            return json(["added": devices.devices.count, "devices": state.devices.count])
        case (.POST, "/keys"):
            guard let key = try? JSONDecoder().decode(ProviderKey.self, from: body) else {
                return problem(
                    .badRequest, "invalid_json", #"the body must be {"keyID","teamID","publicKeyPEM","topics":[...]}"#)
            }
            do {
                try state.keys.register(key)
                return json(["registered": key.keyID])
            } catch {
                return problem(.badRequest, "invalid_key", "\(error)")
            }
        default:
            return problem(.notFound, "not_found", "no admin route \(head.method) \(path); see docs/apns-sim.md")
        }
    }
}

extension APNsRequestRules {
    /// A device token as written in a device list: the lower-cased token, or nil if it is not
    /// hex of even length.
    static func deviceToken(fromPathText token: String) -> String? {
        let path = Array(("/3/device/" + token).utf8)
        return path.withUnsafeBytes { bytes -> String? in try? deviceToken(fromPath: bytes).get() }
    }
}
