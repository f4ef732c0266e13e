import ArgumentParser
import Foundation
import HeraldCLI
import HeraldKit

/// `herald dev phones`: simulated phones, in the foreground on HeraldKit's core, in the background
/// on what apns-sim delivers.
struct DevPhonesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "phones",
        abstract:
            "Simulated phones: in the foreground on HeraldKit's long connection, in the background on APNs, until SIGTERM.",
        discussion: """
            herald dev phones --devices online.ndjson [--background away.ndjson] --key hk_client_… \
              --state .local/phones [--address 127.0.0.1:7443 --ca gateway.crt] [--silent-every 10] \
              [--apns-sim http://127.0.0.1:8444] \
              [--api http://127.0.0.1:8080 --open-share 0.3 --action-share 0.25]
            Each line of a file is a device ({"token": "…", "environment": "sandbox"}, as `herald dev \
            devices` writes them). A phone of --devices is in the foreground: it says hello, \
            acknowledges what it is sent (except every --silent-every-th, which never does, so its \
            pushes also go through APNs), pings, and reconnects with HeraldKit's back-off. A phone of \
            --background holds no connection: it gets what apns-sim accepted for its token (read from \
            --apns-sim's GET /notifications four times a second). Every phone shows a push once, \
            whichever road brings it first; later copies count as duplicates. With --api each \
            acknowledging phone reports received, then opened for a share of the pushes and an action \
            "reply" for a share of those opened (a hash of token and push id decides); a phone in the \
            background does the same for an alert APNs showed it, reporting received only when the \
            alert had mutable-content (only then does a service extension run); each batch is sent \
            twice. Every second STATE/status.json says how many are live and what they received; on \
            SIGTERM STATE/report.json lists per token the pushes over the connection (push id, the \
            payload's herald.push_id, receipt time in ms), the APNs copies (apns-id, herald.push_id, \
            apns-sim's time in ms), what was shown and what was a duplicate, revokes, events, what \
            repeated batches counted, and refusals. The gateway's address and certificate and \
            apns-sim's admin URL default to the dev stack's (herald dev env).
            """)

    @OptionGroup var dir: DevDirectoryOption
    @Option(help: "NDJSON file of devices in the foreground (token, environment).") var devices: String?
    @Option(help: "NDJSON file of devices in the background: reached through APNs only.") var background: String?
    @Option(
        name: .customLong("apns-sim"),
        help: "apns-sim's admin URL: the APNs copies are read there (default: the dev stack's).")
    var apnsSim: String?
    @Option(help: "The app's client key.") var key: String
    @Option(help: "Folder for status.json and report.json.") var state: String
    @Option(help: "The gateway as HOST:PORT (default: the dev stack's).") var address: String?
    @Option(help: "PEM certificate(s) to trust for the gateway (default: the dev stack's).") var ca: String?
    @Option(name: .customLong("silent-every"), help: "Every K-th phone never acknowledges (0: none).") var silentEvery =
        0
    @Option(help: "herald-api's URL: report engagement events.") var api: String?
    @Option(name: .customLong("open-share"), help: "Share of pushes a user opens.") var openShare = 0.3
    @Option(name: .customLong("action-share"), help: "Share of opened pushes answered with the reply action.")
    var actionShare = 0.25

    func run() async throws {
        let termination = Termination()
        let stack = try? DevStack.load(from: dir.path)
        guard devices != nil || background != nil else {
            throw ValidationError("give --devices (phones in the foreground), --background, or both")
        }
        var endpoint: GatewayEndpoint?
        let address = address ?? stack?.gatewayAddress ?? "none"
        if devices != nil {
            guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
                throw ValidationError("give --address HOST:PORT (no dev stack with a gateway was found)")
            }
            guard let caPath = ca ?? stack?.gatewayCertificate,
                let pem = try? String(contentsOfFile: caPath, encoding: .utf8)
            else {
                throw ValidationError("give --ca with the gateway's certificate (no dev stack certificate was found)")
            }
            endpoint = GatewayEndpoint(
                host: String(address[..<colon]), port: port, trustedCertificatesPEM: pem, serverName: "localhost")
        }
        // The APNs copies are read when there are phones in the background or when asked.
        let simulator =
            apnsSim ?? (background == nil ? nil : stack.map { "http://127.0.0.1:\($0.apnsSim.adminPort)" })
        if background != nil, simulator == nil {
            throw ValidationError("give --apns-sim with apns-sim's admin URL: phones in the background read it")
        }
        let list = try devices.map(Self.readDevices) ?? []
        let away = try background.map(Self.readDevices) ?? []
        let folder = URL(fileURLWithPath: state)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let fleet = PhoneFleet(
            settings: .init(
                endpoint: endpoint,
                clientKey: key, state: folder, silentEvery: silentEvery, api: api.flatMap(URL.init(string:)),
                openShare: openShare, actionShare: actionShare, apnsSim: simulator.flatMap(URL.init(string:))),
            devices: list, background: away)
        print(
            "herald dev phones: \(list.count) phones to \(address), \(away.count) in the background;"
                + " status in \(state)/status.json")
        try await fleet.run(until: { await termination.wait() })
        print("herald dev phones: stopped; \(state)/report.json written")
    }

    /// The devices of an NDJSON file (token, environment; other fields ignored).
    private static func readDevices(from path: String) throws -> [(token: String, environment: String)] {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        let list: [(token: String, environment: String)] = lines.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let token = object["token"] as? String
            else { return nil }
            return (token, object["environment"] as? String ?? "sandbox")
        }
        guard !list.isEmpty else { throw ValidationError("\(path) holds no devices") }
        return list
    }
}

/// SIGTERM and SIGINT, caught from the moment it is made (a signal before the phones are up still
/// ends the run with a report), awaited by ``wait()``.
final class Termination: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var fired = false
    private var waiter: CheckedContinuation<Void, Never>?
    private var sources: [any DispatchSourceSignal] = []

    init() {
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { [weak self] in self?.fire() }
            source.resume()
            sources.append(source)
        }
    }

    private func fire() {
        let pending = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            fired = true
            defer { waiter = nil }
            return waiter
        }
        pending?.resume()
    }

    /// Returns once a signal came (at once if one came already).
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let already = lock.withLock { () -> Bool in
                if fired { return true }
                waiter = continuation
                return false
            }
            if already { continuation.resume() }
        }
    }
}
