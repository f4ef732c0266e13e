import ArgumentParser
import Foundation
import HeraldCLI
import HeraldKit

/// `herald dev phones`: simulated phones in the foreground, on HeraldKit's core.
struct DevPhonesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "phones",
        abstract:
            "Simulated phones in the foreground: HeraldKit's long connection for each device of a file, until SIGTERM.",
        discussion: """
            herald dev phones --devices online.ndjson --key hk_client_… --state .local/phones \
              [--address 127.0.0.1:7443 --ca gateway.crt] [--silent-every 10] \
              [--api http://127.0.0.1:8080 --open-share 0.3 --action-share 0.25]
            Each line of the file is a device ({"token": "…", "environment": "sandbox"}, as `herald dev \
            devices` writes them). Each phone says hello, acknowledges what it is sent (except every \
            --silent-every-th, which never does, so its pushes also go through APNs), pings, and \
            reconnects with HeraldKit's back-off. With --api each acknowledging phone reports \
            received, then opened for a share of the pushes and an action "reply" for a share of those \
            opened (a hash of token and push id decides), each batch sent twice. Every second \
            STATE/status.json says how many are live and what they received; on SIGTERM \
            STATE/report.json lists per token the pushes (push id, the payload's herald.push_id, \
            receipt time in ms), revokes, events, what repeated batches counted, and refusals. \
            The gateway's address and certificate default to the dev stack's (herald dev env).
            """)

    @OptionGroup var dir: DevDirectoryOption
    @Option(help: "NDJSON file of devices (token, environment).") var devices: String
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
        guard let address = address ?? stack?.gatewayAddress, let colon = address.lastIndex(of: ":"),
            let port = Int(address[address.index(after: colon)...])
        else { throw ValidationError("give --address HOST:PORT (no dev stack with a gateway was found)") }
        guard let caPath = ca ?? stack?.gatewayCertificate,
            let pem = try? String(contentsOfFile: caPath, encoding: .utf8)
        else { throw ValidationError("give --ca with the gateway's certificate (no dev stack certificate was found)") }
        let lines = try String(contentsOfFile: devices, encoding: .utf8).split(separator: "\n")
        let list: [(token: String, environment: String)] = lines.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let token = object["token"] as? String
            else { return nil }
            return (token, object["environment"] as? String ?? "sandbox")
        }
        guard !list.isEmpty else { throw ValidationError("\(devices) holds no devices") }
        let folder = URL(fileURLWithPath: state)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let fleet = PhoneFleet(
            settings: .init(
                endpoint: GatewayEndpoint(
                    host: String(address[..<colon]), port: port, trustedCertificatesPEM: pem, serverName: "localhost"),
                clientKey: key, state: folder, silentEvery: silentEvery, api: api.flatMap(URL.init(string:)),
                openShare: openShare, actionShare: actionShare),
            devices: list)
        print("herald dev phones: \(list.count) phones to \(address); status in \(state)/status.json")
        try await fleet.run(until: { await termination.wait() })
        print("herald dev phones: stopped; \(state)/report.json written")
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
