import AsyncHTTPClient
import Foundation
import HeraldGatewayProtocol
import HeraldKit
import NIOCore
import NIOFoundationCompat
import Synchronization

/// Thousands of simulated phones in one process (`herald dev phones`), each one HeraldKit's long
/// connection — its state machine, its reconnect back-off, its acknowledgements — and, with an
/// API address, HeraldKit's engagement events for what its user does. Every second the state
/// folder's status.json says how many are live and what they received; on SIGTERM report.json
/// lists, per token, every push, revoke and event (docs/cli.md).
final class PhoneFleet: Sendable {
    struct Settings: Sendable {
        var endpoint: GatewayEndpoint
        var clientKey: String
        var state: URL
        /// Every K-th phone (index % K == 0) never acknowledges: its pushes go through APNs too.
        var silentEvery: Int
        /// herald-api's base URL: report engagement when set.
        var api: URL?
        var openShare: Double
        var actionShare: Double
        /// Connections started together, then a pause (the gateway caps handshakes in progress).
        var startBurst = 100
    }

    let settings: Settings
    let phones: [SimulatedPhone]
    private let counters = Mutex<[String: Int]>([:])
    private let reportsPending = Atomic<Int>(0)
    private let reports: AsyncStream<(SimulatedPhone, String)>
    private let reportQueue: AsyncStream<(SimulatedPhone, String)>.Continuation

    init(settings: Settings, devices: [(token: String, environment: String)]) {
        self.settings = settings
        phones = devices.enumerated().map { index, device in
            SimulatedPhone(
                token: device.token, environment: device.environment,
                acknowledges: !(settings.silentEvery > 0 && index % settings.silentEvery == 0))
        }
        (reports, reportQueue) = AsyncStream.makeStream()
    }

    func count(_ name: String) {
        counters.withLock { $0[name, default: 0] += 1 }
    }

    /// Runs the phones until `stop` returns, then writes report.json.
    func run(until stop: @Sendable () async -> Void) async throws {
        let tls = try GatewayTLS(endpoint: settings.endpoint)
        let connections = try phones.map { phone in
            let identity = GatewayClientSession.Identity(
                clientKey: settings.clientKey, deviceToken: phone.token, environment: phone.environment,
                agent: "herald dev phones")
            return try GatewayConnection(
                endpoint: settings.endpoint, identity: identity, handlers: handlers(for: phone), tls: tls,
                acknowledges: phone.acknowledges)
        }
        let api = settings.api.map {
            HeraldAPIClient(baseURL: $0, clientKey: settings.clientKey, transport: AsyncHTTPClientTransport())
        }
        await withDiscardingTaskGroup { group in
            group.addTask { [self] in
                for (index, connection) in connections.enumerated() where !Task.isCancelled {
                    connection.start()
                    if index % settings.startBurst == settings.startBurst - 1 {
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                }
            }
            group.addTask { [self] in
                while !Task.isCancelled {
                    writeStatus()
                    try? await Task.sleep(for: .seconds(1))
                }
            }
            if let api {
                group.addTask { [self] in
                    await withDiscardingTaskGroup { reporting in
                        for await (phone, pushID) in reports {
                            reporting.addTask { await self.report(phone, pushID: pushID, api: api) }
                        }
                    }
                }
            }
            await stop()
            for connection in connections { connection.stop() }
            reportQueue.finish()
            group.cancelAll()
        }
        writeReport()
        writeStatus()
    }

    private func handlers(for phone: SimulatedPhone) -> GatewayConnection.Handlers {
        GatewayConnection.Handlers(
            push: { [self] push in
                let pushID = phone.received(push, at: Date().timeIntervalSince1970 * 1000)
                if phone.acknowledges, settings.api != nil, !pushID.isEmpty {
                    reportsPending.add(1, ordering: .relaxed)
                    if case .terminated = reportQueue.yield((phone, pushID)) {
                        reportsPending.subtract(1, ordering: .relaxed)  // stopping: not reported
                    }
                }
            },
            revoke: { revocation in
                phone.record.withLock { $0.revokes.append(revocation.pushID?.uuidString.lowercased() ?? "") }
            },
            live: { [self] live in
                phone.record.withLock {
                    $0.live = live
                    if live { $0.welcomes += 1 }
                }
                count(live ? "welcomes" : "disconnects")
            },
            stopped: { [self] code, _ in count("stopped:\(code)") })
    }

    /// Reports what the phone's user did with a push it acknowledged, the way an SDK that did not
    /// hear the first answer would: the batch is sent, and sent again; what the repeat counted is
    /// kept (the server should count nothing twice). 429 and no answer are retried.
    private func report(_ phone: SimulatedPhone, pushID: String, api: HeraldAPIClient) async {
        defer { reportsPending.subtract(1, ordering: .relaxed) }
        guard let id = UUID(uuidString: pushID) else { return }
        let chosen = phone.choices(for: pushID, openShare: settings.openShare, actionShare: settings.actionShare)
        let events = chosen.map {
            EngagementEvent(pushID: id, token: phone.token, type: $0.0, action: $0.1, occurredAt: Date())
        }
        switch await send(events, api: api) {
        case .failure(let error):
            phone.record.withLock { $0.eventFailures.append((pushID, error.status, error.message)) }
            return
        case .success:
            phone.record.withLock { $0.events += chosen.map { (pushID, $0.0.rawValue, $0.1 ?? "") } }
        }
        switch await send(events, api: api) {
        case .failure(let error):
            phone.record.withLock { $0.eventFailures.append((pushID, error.status, error.message)) }
        case .success(let again):
            phone.record.withLock { $0.recounted += again.counted }
        }
    }

    private func send(_ events: [EngagementEvent], api: HeraldAPIClient) async -> Result<
        EventBatchResult, HeraldAPIError
    > {
        var last = HeraldAPIError(status: 0, code: "no_answer", message: "not sent")
        for _ in 0..<50 {
            do {
                let result = try await api.report(events)
                count("events_200")
                return .success(result)
            } catch let error as HeraldAPIError {
                last = error
                guard error.isRetryable else {
                    count("events_\(error.status)")
                    return .failure(error)
                }
                count(error.status == 0 ? "events_no_answer" : "events_\(error.status)")
                let wait = Double(error.retryAfterSeconds ?? 1) * Double.random(in: 1...1.5)
                try? await Task.sleep(for: .milliseconds(Int(wait * 1000)))
            } catch {
                return .failure(HeraldAPIError(status: 0, code: "unexpected", message: "\(error)"))
            }
        }
        return .failure(last)
    }

    /// report.json: the phones in the devices file's order (a reader may count them by position).
    private func writeReport() {
        var text = Array(#"{"phones":{"#.utf8)
        for (index, phone) in phones.enumerated() {
            guard let key = try? JSONSerialization.data(withJSONObject: [phone.token]),
                let entry = try? JSONSerialization.data(withJSONObject: phone.report)
            else { continue }
            if index > 0 { text.append(UInt8(ascii: ",")) }
            text += key.dropFirst().dropLast()  // the token as a JSON string
            text.append(UInt8(ascii: ":"))
            text += entry
        }
        text += Array(#"},"counters":"#.utf8)
        text += (try? JSONSerialization.data(withJSONObject: counters.withLock { $0 })) ?? Data("{}".utf8)
        text.append(UInt8(ascii: "}"))
        try? Data(text).write(to: settings.state.appendingPathComponent("report.json"), options: .atomic)
    }

    private func writeStatus() {
        let records = phones.map { $0.record.withLock { ($0.live, $0.pushes.count, $0.revokes.count) } }
        writeJSON(
            [
                "live": records.filter(\.0).count, "phones": phones.count,
                "pushes": records.reduce(0) { $0 + $1.1 }, "revokes": records.reduce(0) { $0 + $1.2 },
                "reports_pending": reportsPending.load(ordering: .relaxed), "counters": counters.withLock { $0 },
            ], to: "status.json")
    }

    /// Writes `value` as JSON to the state folder, atomically (a reader never sees half a file).
    private func writeJSON(_ value: [String: Any], to name: String) {
        guard let data = try? JSONSerialization.data(withJSONObject: value) else { return }
        try? data.write(to: settings.state.appendingPathComponent(name), options: .atomic)
    }
}

/// HeraldKit's HTTP transport over AsyncHTTPClient: herald-admin links no FoundationNetworking
/// (which would need libcurl in the static build and the image).
struct AsyncHTTPClientTransport: HeraldHTTPTransport {
    func send(method: String, url: URL, headers: [String: String], body: Data) async throws -> HeraldHTTPAnswer {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .init(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(data: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let answer = try await response.body.collect(upTo: 1 << 20)
        return HeraldHTTPAnswer(
            status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
            body: Data(buffer: answer))
    }
}
