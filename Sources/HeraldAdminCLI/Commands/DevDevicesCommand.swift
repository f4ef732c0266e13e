import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldAPNsVocabulary
import HeraldCLI
import NIOCore
import NIOFoundationCompat

/// Simulated devices for the demo and the end-to-end tests. Tokens say what they are in their
/// first hex digits, which herald-api shows as `token_prefix`: `dead…` devices are unregistered
/// at APNs (uninstalled after they registered), `badd…` ones are unknown to APNs
/// (BadDeviceToken); all others are deliverable.
enum SimulatedDevices {
    static let unregisteredPrefix = "dead"
    static let badPrefix = "badd"

    static func token(kind: String?) -> String {
        var generator = SystemRandomNumberGenerator()
        var hex = Hexadecimal.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        if let kind {
            hex = kind + hex.dropFirst(kind.count)
        } else if hex.hasPrefix(unregisteredPrefix) || hex.hasPrefix(badPrefix) {
            hex = "0" + hex.dropFirst()
        }
        return hex
    }
}

struct DevDevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract:
            "Write simulated devices to an NDJSON file for `herald devices import`, or register a file's tokens with apns-sim.",
        discussion: """
            herald dev devices --count 100000 --out devices.ndjson     # then: herald devices import devices.ndjson
            herald dev devices --register devices.ndjson --topic com.example.demo
            Tokens starting dead… are registered with apns-sim as unregistered now (after their \
            registration with Herald, so Herald invalidates them on APNs' 410); badd… ones are left \
            unknown (BadDeviceToken); the rest are deliverable. One device in 10 has an alias \
            (user-N); every device has one of the tags news, sports, weather; one in 20 also vip.
            """)

    @OptionGroup var dir: DevDirectoryOption
    @Option(help: "How many devices to write.") var count: Int = 100_000
    @Option(help: "Where to write them.") var out: String?
    @Option(name: .customLong("unregistered-percent"), help: "Devices unregistered at APNs.") var unregisteredPercent:
        Double = 2
    @Option(name: .customLong("bad-percent"), help: "Devices with tokens APNs does not know.") var badPercent: Double =
        1
    @Option(help: "sandbox or production.") var environment: String = "sandbox"
    @Option(help: "Register this file's tokens with the stack's apns-sim.") var register: String?
    @Option(help: "The bundle id the tokens belong to at apns-sim.") var topic: String?

    func run() async throws {
        if let register {
            guard let topic else { throw ValidationError("--register needs --topic (the app's bundle id)") }
            let stack = try DevStack.load(from: dir.path)
            try await Self.register(
                file: register, topic: topic, adminURL: "http://127.0.0.1:\(stack.apnsSim.adminPort)")
            return
        }
        guard let out else { throw ValidationError("give --out FILE (to write devices) or --register FILE") }
        FileManager.default.createFile(atPath: out, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: out) else { throw CLIError("cannot write \(out)") }
        defer { try? handle.close() }
        let tags = ["news", "sports", "weather"]
        var buffer = ""
        var kinds: [String: Int] = [:]
        for index in 0..<count {
            let roll = Double.random(in: 0..<100)
            let kind =
                roll < unregisteredPercent
                ? SimulatedDevices.unregisteredPrefix
                : roll < unregisteredPercent + badPercent ? SimulatedDevices.badPrefix : nil
            kinds[kind ?? "ok", default: 0] += 1
            var deviceTags = [tags[index % 3]]
            if index % 20 == 0 { deviceTags.append("vip") }
            var line =
                #"{"token":"\#(SimulatedDevices.token(kind: kind))","environment":"\#(environment)","tags":["\#(deviceTags.joined(separator: "\",\""))"]"#
            if index % 10 == 0 { line += #","alias":"user-\#(index)""# }
            buffer += line + "}\n"
            if buffer.utf8.count > 1 << 20 {
                handle.write(Data(buffer.utf8))
                buffer = ""
            }
        }
        handle.write(Data(buffer.utf8))
        print(
            "wrote \(count) simulated devices to \(out): \(kinds["ok", default: 0]) deliverable, "
                + "\(kinds[SimulatedDevices.unregisteredPrefix, default: 0]) to be unregistered at APNs (dead…), "
                + "\(kinds[SimulatedDevices.badPrefix, default: 0]) unknown to APNs (badd…)")
    }

    /// Tells apns-sim about the file's tokens, 10,000 at a time.
    static func register(file: String, topic: String, adminURL: String) async throws {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw CLIError("cannot read \(file)")
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var batch: [[String: Any]] = []
        var counts = (deliverable: 0, unregistered: 0, unknown: 0)
        func flush() async throws {
            guard !batch.isEmpty else { return }
            var request = HTTPClientRequest(url: adminURL + "/devices")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["devices": batch])))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 20)
            guard response.status.code == 200 else {
                throw CLIError("apns-sim refused the devices (\(response.status.code)): \(String(buffer: body))")
            }
            batch.removeAll(keepingCapacity: true)
        }
        for line in text.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let token = object["token"] as? String
            else { continue }
            if token.hasPrefix(SimulatedDevices.badPrefix) {
                counts.unknown += 1
                continue
            }
            var device: [String: Any] = ["token": token, "topic": topic]
            if token.hasPrefix(SimulatedDevices.unregisteredPrefix) {
                device["unregisteredAt"] = now
                counts.unregistered += 1
            } else {
                counts.deliverable += 1
            }
            batch.append(device)
            if batch.count == 10_000 { try await flush() }
        }
        try await flush()
        print(
            "apns-sim knows \(counts.deliverable) deliverable and \(counts.unregistered) unregistered devices of \(topic); "
                + "\(counts.unknown) tokens stay unknown to it")
    }
}
