import APNsSimulator
import ArgumentParser
import Foundation
import Logging
import NIOSSL
import ServiceLifecycle

/// `apns-sim`: reads its flags into an `APNsSimulatorConfiguration` and serves until SIGTERM or
/// SIGINT. Every flag is described in docs/apns-sim.md.
@main
struct APNsSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-sim",
        abstract: "A faithful simulator of Apple's APNs provider API (TLS, HTTP/2), with fault injection.")

    @Option(help: "Address of the provider API.") var host = "127.0.0.1"
    @Option(help: "Port of the provider API (0 picks a free one).") var port = 2197
    @Option(help: "Address of the admin endpoint (HTTP/1.1, JSON).") var adminHost = "127.0.0.1"
    @Option(help: "Port of the admin endpoint (0 picks a free one).") var adminPort = 2198
    @Flag(help: "Turn the admin endpoint off.") var noAdmin = false

    @Option(help: "PEM certificate chain to serve (default: a generated self-signed certificate).") var certificate:
        String?
    @Option(help: "PEM private key of --certificate.") var privateKey: String?
    @Option(help: "Write the served certificate (PEM) here, for clients to trust.") var writeCertificate: String?
    @Option(help: "PEM certificate authorities for client certificates; turns certificate-based authentication on.")
    var clientCA: String?

    @Option(
        name: .customLong("key"),
        help: "A trusted token key: KEYID:TEAMID:PUBLIC_KEY.pem[:topic,topic,...] (repeatable).")
    var keys: [String] = []
    @Option(
        help:
            "NDJSON file of devices: {\"token\":\"<hex>\",\"topic\":\"<bundle id>\",\"unregisteredAt\":<ms, optional>} per line."
    )
    var devices: String?
    @Flag(help: "Treat unknown well-formed tokens as deliverable (benchmarks).") var acceptAnyToken = false

    @Option(help: "SETTINGS_MAX_CONCURRENT_STREAMS once a connection has authenticated.") var maxConcurrentStreams:
        UInt32 = 1000
    @Option(help: "SETTINGS_MAX_CONCURRENT_STREAMS before a connection's first authenticated request.")
    var streamsBeforeAuth: UInt32 = 1

    @Option(help: "Faults as JSON (see docs/apns-sim.md), e.g. '{\"serviceUnavailable\":0.1}'.") var faults: String?
    @Option(help: "Record accepted notifications: full or counts.") var record = "full"
    @Option(help: "Append every accepted notification to this NDJSON file.") var recordFile: String?
    @Option(help: "Event-loop threads (default: one per core).") var threads = ProcessInfo.processInfo
        .activeProcessorCount
    @Option(help: "Write the ports to this file (JSON) once listening.") var readyFile: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel = "info"

    static func main() async {
        do {
            // `--help` parses to ArgumentParser's help command, not to this one: it is answered
            // below like every other early exit.
            guard let command = try parseAsRoot() as? APNsSimCommand else {
                print(helpMessage())
                Foundation.exit(0)
            }
            try await command.serve()
        } catch let error as APNsSimulatorError {
            FileHandle.standardError.write(Data("apns-sim: \(error.description)\n".utf8))
            Foundation.exit(2)
        } catch {
            let message = Self.message(for: error)
            let code = Self.exitCode(for: error)
            if code == .success {
                print(Self.fullMessage(for: error))
                Foundation.exit(0)
            }
            FileHandle.standardError.write(Data("apns-sim: \(message) (see apns-sim --help)\n".utf8))
            Foundation.exit(code.rawValue == 0 ? 2 : code.rawValue)
        }
    }

    func makeConfiguration() throws -> APNsSimulatorConfiguration {
        var configuration = APNsSimulatorConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.adminHost = adminHost
        configuration.adminPort = noAdmin ? nil : adminPort
        configuration.maxConcurrentStreams = maxConcurrentStreams
        configuration.streamsBeforeAuthentication = streamsBeforeAuth
        configuration.acceptAnyToken = acceptAnyToken
        configuration.threads = threads
        guard let mode = RecordingMode(rawValue: record) else {
            throw APNsSimulatorError("--record must be full or counts, not \(record)")
        }
        configuration.recording = mode
        configuration.recordFile = recordFile

        switch (certificate, privateKey) {
        case (let certificate?, let privateKey?):
            configuration.identity = try SimulatorIdentity.load(
                certificateFile: certificate, privateKeyFile: privateKey)
        case (nil, nil):
            configuration.identity = try SimulatorIdentity.selfSigned().identity
        default:
            throw APNsSimulatorError("--certificate and --private-key go together; give both or neither")
        }
        if let clientCA {
            do {
                configuration.clientCertificateAuthorities = try NIOSSLCertificate.fromPEMFile(clientCA)
            } catch {
                throw APNsSimulatorError(
                    "cannot read --client-ca \(clientCA): \(error); give a PEM file of CA certificates")
            }
        }
        configuration.keys = try keys.map(Self.parseKey)
        if let devices { configuration.devices = try Self.readDevices(devices) }
        if let faults {
            do {
                configuration.faults = try JSONDecoder().decode(APNsFaults.self, from: Data(faults.utf8))
            } catch let error as APNsSimulatorError {
                throw error
            } catch {
                throw APNsSimulatorError(
                    "--faults is not a JSON object of faults (\(error)); e.g. '{\"serviceUnavailable\":0.1}'")
            }
        }
        return configuration
    }

    static func parseKey(_ text: String) throws -> ProviderKey {
        let parts = text.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
            throw APNsSimulatorError("--key \(text): expected KEYID:TEAMID:PUBLIC_KEY.pem[:topic,topic]")
        }
        guard let pem = try? String(contentsOfFile: parts[2], encoding: .utf8) else {
            throw APNsSimulatorError("--key \(parts[0]): cannot read the public key file \(parts[2])")
        }
        let topics = parts.count == 4 ? parts[3].split(separator: ",").map(String.init) : []
        let key = ProviderKey(keyID: parts[0], teamID: parts[1], publicKeyPEM: pem, topics: topics)
        _ = try ProviderKeyRegistry([key])  // fails now, with the key id, if the PEM is not a P-256 key
        return key
    }

    static func readDevices(_ path: String) throws -> [SimulatedDevice] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw APNsSimulatorError("cannot read --devices \(path)")
        }
        var devices: [SimulatedDevice] = []
        let decoder = JSONDecoder()
        for (index, line) in text.split(separator: "\n").enumerated()
        where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            guard let device = try? decoder.decode(SimulatedDevice.self, from: Data(line.utf8)) else {
                throw APNsSimulatorError(
                    "--devices \(path) line \(index + 1) is not {\"token\":\"<hex>\",\"topic\":\"<bundle id>\"}")
            }
            devices.append(device)
        }
        return devices
    }

    func serve() async throws {
        var logger = Logger(label: "apns-sim")
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw APNsSimulatorError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        logger.logLevel = level
        let configuration = try makeConfiguration()
        let simulator = try await APNsSimulator.start(configuration, logger: logger)
        if let writeCertificate {
            guard
                FileManager.default.createFile(
                    atPath: writeCertificate, contents: Data(simulator.identity.certificatePEM.utf8))
            else {
                await simulator.shutdown()
                throw APNsSimulatorError("cannot write --write-certificate \(writeCertificate)")
            }
        }
        let admin = simulator.adminPort.map { "http://\(adminHost):\($0)" } ?? "off"
        print("apns-sim: provider API https://\(host):\(simulator.port) (HTTP/2), admin \(admin)")
        fflush(nil)
        if let readyFile {
            let ready = #"{"port":\#(simulator.port),"adminPort":\#(simulator.adminPort ?? 0)}"#
            guard FileManager.default.createFile(atPath: readyFile, contents: Data(ready.utf8)) else {
                await simulator.shutdown()
                throw APNsSimulatorError("cannot write --ready-file \(readyFile)")
            }
        }
        let group = ServiceGroup(
            configuration: .init(services: [simulator], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
