import AsyncHTTPClient
import Foundation
import HeraldGatewayProtocol
import HeraldKit
import NIOCore
import NIOFoundationCompat
import Synchronization

/// Thousands of simulated phones in one process (`herald dev phones`). A phone in the foreground
/// is HeraldKit's long connection — its state machine, its reconnect back-off, its
/// acknowledgements; a phone in the background holds none and gets what APNs delivers, read from
/// apns-sim's record as it grows. Every phone shows a push once whichever road brings it
/// (HeraldKit's ShownPushes) and, with an API address, reports through HeraldKit's engagement
/// events what its user does. Every second the state folder's status.json says how many are live
/// and what they received; on SIGTERM report.json lists, per token, every push, APNs copy,
/// revoke and event (docs/cli.md).
final class PhoneFleet: Sendable {
    struct Settings: Sendable {
        /// The gateway the phones in the foreground connect to (nil when every phone is in the background).
        var endpoint: GatewayEndpoint?
        var clientKey: String
        var state: URL
        /// Every K-th phone (index % K == 0) never acknowledges: its pushes go through APNs too.
        var silentEvery: Int
        /// herald-api's base URL: report engagement when set.
        var api: URL?
        var openShare: Double
        var actionShare: Double
        /// apns-sim's admin URL: what APNs delivered to the phones is read there.
        var apnsSim: URL?
        /// Connections started together, then a pause (the gateway caps handshakes in progress).
        var startBurst = 100
        /// Engagement reports sent at a time; the rest wait their turn.
        var reportsInFlight = 32
    }

    let settings: Settings
    /// The phones in the foreground, in file order, then those in the background.
    let phones: [SimulatedPhone]
    private let phonesByToken: [String: SimulatedPhone]
    private let counters = Mutex<[String: Int]>([:])
    private let reportsPending = Atomic<Int>(0)
    /// How many of apns-sim's recorded notifications were read.
    private let apnsRead = Atomic<Int>(0)
    private let reports: AsyncStream<Engagement>
    private let reportQueue: AsyncStream<Engagement>.Continuation

    /// What one phone's user did with one push, to report.
    private struct Engagement: Sendable {
        var phone: SimulatedPhone
        var pushID: String
        /// False for an alert APNs showed with no service extension running: nothing reports `received`.
        var receivedReported: Bool
    }

    init(
        settings: Settings, devices: [(token: String, environment: String)],
        background: [(token: String, environment: String)] = []
    ) {
        self.settings = settings
        phones =
            devices.enumerated().map { index, device in
                SimulatedPhone(
                    token: device.token, environment: device.environment,
                    acknowledges: !(settings.silentEvery > 0 && index % settings.silentEvery == 0))
            }
            + background.map {
                SimulatedPhone(token: $0.token, environment: $0.environment, acknowledges: false, inForeground: false)
            }
        phonesByToken = Dictionary(phones.map { ($0.token, $0) }, uniquingKeysWith: { first, _ in first })
        (reports, reportQueue) = AsyncStream.makeStream()
    }

    func count(_ name: String) {
        counters.withLock { $0[name, default: 0] += 1 }
    }

    /// Runs the phones until `stop` returns, then writes report.json.
    func run(until stop: @Sendable () async -> Void) async throws {
        let foreground = phones.filter(\.inForeground)
        let connections: [GatewayConnection]
        if let endpoint = settings.endpoint, !foreground.isEmpty {
            let tls = try GatewayTLS(endpoint: endpoint)
            connections = try foreground.map { phone in
                let identity = GatewayClientSession.Identity(
                    clientKey: settings.clientKey, deviceToken: phone.token, environment: phone.environment,
                    agent: "herald dev phones")
                return try GatewayConnection(
                    endpoint: endpoint, identity: identity, handlers: handlers(for: phone), tls: tls,
                    acknowledges: phone.acknowledges)
            }
        } else {
            connections = []
        }
        // The reports' own HTTP client, with a connection for each report in flight (the shared
        // client's 8 a host left three in four reports waiting for a connection, and the
        // backlog of a broadcast's opens drained slower than the phones made it), and idle
        // connections given up before herald-api's 60 s closes them.
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(
            idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: settings.reportsInFlight)
        let reportingClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let api = settings.api.map {
            HeraldAPIClient(
                baseURL: $0, clientKey: settings.clientKey, transport: AsyncHTTPClientTransport(client: reportingClient)
            )
        }
        // APNs copies from now on: what apns-sim held before the phones started is not theirs.
        if let apnsSim = settings.apnsSim, let accepted = await acceptedByAPNsSim(apnsSim) {
            apnsRead.store(accepted, ordering: .relaxed)
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
                    // A bounded number of reports at a time: thousands queued at once in the HTTP
                    // client's pool time out there, and its queue (linear removal) then takes the
                    // event loops the phones' connections run on.
                    await withTaskGroup(of: Void.self) { reporting in
                        var running = 0
                        for await engagement in reports {
                            if running == settings.reportsInFlight {
                                await reporting.next()
                                running -= 1
                            }
                            reporting.addTask { await self.report(engagement, api: api) }
                            running += 1
                        }
                    }
                }
            }
            if let apnsSim = settings.apnsSim {
                group.addTask { [self] in
                    while !Task.isCancelled {
                        await readAPNsDeliveries(from: apnsSim)
                        try? await Task.sleep(for: .milliseconds(250))
                    }
                }
            }
            await stop()
            for connection in connections { connection.stop() }
            reportQueue.finish()
            group.cancelAll()
        }
        // What APNs delivered up to the stop is in the report, even if the last poll was missed.
        if let apnsSim = settings.apnsSim { await readAPNsDeliveries(from: apnsSim) }
        writeReport()
        try? await reportingClient.shutdown()
        writeStatus()
    }

    private func handlers(for phone: SimulatedPhone) -> GatewayConnection.Handlers {
        GatewayConnection.Handlers(
            push: { [self] push in
                let pushID = phone.received(push, at: Date().timeIntervalSince1970 * 1000)
                if phone.acknowledges, !pushID.isEmpty {
                    queueReport(Engagement(phone: phone, pushID: pushID, receivedReported: true))
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

    private func queueReport(_ engagement: Engagement) {
        guard settings.api != nil else { return }
        reportsPending.add(1, ordering: .relaxed)
        if case .terminated = reportQueue.yield(engagement) {
            reportsPending.subtract(1, ordering: .relaxed)  // stopping: not reported
        }
    }

    /// How many notifications apns-sim has accepted (its `/stats`), nil when it does not answer.
    private func acceptedByAPNsSim(_ apnsSim: URL) async -> Int? {
        guard let stats = try? await fetchLines(apnsSim.appendingPathComponent("stats"), query: nil).first,
            let object = try? JSONSerialization.jsonObject(with: Data(stats)) as? [String: Any]
        else { return nil }
        return object["accepted"] as? Int
    }

    /// Reads the notifications apns-sim accepted since the last read, a page at a time, and hands
    /// each to its phone (a token no phone holds is skipped). A reset of apns-sim noticed (its
    /// count below what was read, with nothing new) starts the reading again from its first.
    private func readAPNsDeliveries(from apnsSim: URL) async {
        let page = 10_000
        while true {
            let read = apnsRead.load(ordering: .relaxed)
            guard
                let lines = try? await fetchLines(
                    apnsSim.appendingPathComponent("notifications"), query: "after=\(read)&limit=\(page)")
            else {
                count("apns_read_failures")
                return
            }
            if lines.isEmpty {
                if let accepted = await acceptedByAPNsSim(apnsSim), accepted < read {
                    apnsRead.store(0, ordering: .relaxed)
                }
                return
            }
            apnsRead.store(read + lines.count, ordering: .relaxed)
            hand(lines)
            if lines.count < page { return }
            await Task.yield()
        }
    }

    /// Hands each line of apns-sim's `GET /notifications` to the phone whose token it names.
    private func hand(_ lines: [ArraySlice<UInt8>]) {
        for line in lines {
            // Most lines of a broadcast are for devices no phone holds: their token is found by
            // a byte search, and only a phone's lines are decoded (JSON decoding every line of a
            // 100,000-device broadcast took the CPU the phones' acknowledgements needed).
            guard let token = Self.token(in: line), let phone = phonesByToken[token],
                let entry = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                let text = entry["payload"] as? String,
                let payload = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            else { continue }
            // Under apns-sim's latency fault (Apple's round trip) a copy is the phone's once its
            // answer was due, not when apns-sim took it.
            let at = (entry["deliverableAt"] as? NSNumber) ?? (entry["receivedAt"] as? NSNumber)
            let arrival = phone.receivedThroughAPNs(
                apnsID: entry["apnsID"] as? String ?? "", payload: payload, at: at?.doubleValue ?? 0)
            count("apns_copies")
            // A phone in the background: its user may open what APNs showed. (One in the
            // foreground reports what came over its connection; a silent one reports nothing.)
            if case .shown(let pushID, let extensionRan) = arrival, !phone.inForeground {
                queueReport(Engagement(phone: phone, pushID: pushID, receivedReported: extensionRan))
            }
        }
    }

    /// The value of a line's `"token":"…"` field (apns-sim writes tokens as lower-case hex, no
    /// escapes), or nil.
    static func token(in line: ArraySlice<UInt8>) -> String? {
        guard let key = line.firstRange(of: #""token":""#.utf8),
            let end = line[key.upperBound...].firstIndex(of: UInt8(ascii: "\""))
        else { return nil }
        return String(decoding: line[key.upperBound..<end], as: UTF8.self)
    }

    /// The lines of an HTTP GET's answer (apns-sim's admin port).
    private func fetchLines(_ url: URL, query: String?) async throws -> [ArraySlice<UInt8>] {
        var address = url.absoluteString
        if let query { address += "?" + query }
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: address), timeout: .seconds(60))
        guard response.status == .ok else { throw APNsSimAnswer(status: response.status.code) }
        let body = try await response.body.collect(upTo: 1 << 30)
        return body.readableBytesView.split(separator: UInt8(ascii: "\n"))
    }

    /// Reports what the phone's user did with a push it acknowledged (or, in the background, was
    /// shown through APNs), the way an SDK that did not hear the first answer would: the batch is
    /// sent, and sent again; what the repeat counted is kept (the server should count nothing
    /// twice). 429 and no answer are retried.
    private func report(_ engagement: Engagement, api: HeraldAPIClient) async {
        defer { reportsPending.subtract(1, ordering: .relaxed) }
        let (phone, pushID) = (engagement.phone, engagement.pushID)
        guard let id = UUID(uuidString: pushID) else { return }
        let chosen = phone.choices(
            for: pushID, openShare: settings.openShare, actionShare: settings.actionShare,
            receivedReported: engagement.receivedReported)
        guard !chosen.isEmpty else { return }
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
            // The fleet is stopping: what is left is not reported (and not retried at once, 50
            // times, as a cancelled request's error would be).
            guard !Task.isCancelled else {
                count("events_abandoned_at_stop")
                return .failure(HeraldAPIError(status: 0, code: "stopped", message: "the fleet stopped first"))
            }
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
        let records = phones.map {
            $0.record.withLock { ($0.live, $0.pushes.count, $0.revokes.count, $0.apns.count, $0.shown.count) }
        }
        writeJSON(
            [
                "live": records.filter(\.0).count, "phones": phones.count,
                "background": phones.count(where: { !$0.inForeground }),
                "pushes": records.reduce(0) { $0 + $1.1 }, "revokes": records.reduce(0) { $0 + $1.2 },
                "apns": records.reduce(0) { $0 + $1.3 }, "shown": records.reduce(0) { $0 + $1.4 },
                "apns_read": apnsRead.load(ordering: .relaxed),
                "reports_pending": reportsPending.load(ordering: .relaxed), "counters": counters.withLock { $0 },
            ], to: "status.json")
    }

    /// Writes `value` as JSON to the state folder, atomically (a reader never sees half a file).
    private func writeJSON(_ value: [String: Any], to name: String) {
        guard let data = try? JSONSerialization.data(withJSONObject: value) else { return }
        try? data.write(to: settings.state.appendingPathComponent(name), options: .atomic)
    }
}

/// apns-sim's admin port answered something other than 200.
private struct APNsSimAnswer: Error {
    var status: UInt
}

/// HeraldKit's HTTP transport over AsyncHTTPClient: herald-admin links no FoundationNetworking
/// (which would need libcurl in the static build and the image).
struct AsyncHTTPClientTransport: HeraldHTTPTransport {
    var client: HTTPClient = .shared

    func send(method: String, url: URL, headers: [String: String], body: Data) async throws -> HeraldHTTPAnswer {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .init(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(data: body))
        let response = try await client.execute(request, timeout: .seconds(60))
        let answer = try await response.body.collect(upTo: 1 << 20)
        return HeraldHTTPAnswer(
            status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
            body: Data(buffer: answer))
    }
}
