import Foundation
import HeraldAPNs
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import HeraldMetrics
import HeraldRecords
import HeraldStore
import Logging
import NIOSSL
import ServiceLifecycle
import Synchronization

/// Where each APNs environment is: Apple's servers, or another host (apns-sim).
public struct SenderEndpoints: Sendable {
    public var production: APNsEndpoint
    public var sandbox: APNsEndpoint

    public init(production: APNsEndpoint = .production, sandbox: APNsEndpoint = .sandbox) {
        self.production = production
        self.sandbox = sandbox
    }

    /// The endpoints the settings name, each trusting the system's roots plus its own
    /// certificate file's.
    /// - Throws: ``SettingError`` naming a file that cannot be read as PEM certificates.
    public init(settings: SenderSettings) throws(SettingError) {
        func trusted(_ file: String?, variable: String) throws(SettingError) -> [NIOSSLCertificate] {
            guard let file else { return [] }
            do {
                return try NIOSSLCertificate.fromPEMFile(file)
            } catch {
                throw SettingError("cannot read \(variable) \(file) as PEM certificates: \(error)")
            }
        }
        production = APNsEndpoint(
            host: settings.productionHost, port: settings.productionPort,
            trustedCertificates: try trusted(
                settings.productionTrustCertificateFile,
                variable: "HERALD_SENDER_APNS_PRODUCTION_TRUST_CERTIFICATE_FILE"))
        sandbox = APNsEndpoint(
            host: settings.sandboxHost, port: settings.sandboxPort,
            trustedCertificates: try trusted(
                settings.sandboxTrustCertificateFile, variable: "HERALD_SENDER_APNS_SANDBOX_TRUST_CERTIFICATE_FILE"))
    }
}

/// An app has no APNs credential for the batch's environment.
public struct MissingCredential: Error, CustomStringConvertible, Sendable {
    public let appID: UUID
    public let environment: APNsEnvironment
    public var description: String {
        "app \(appID) has no APNs credential for \(environment.rawValue): upload one (PUT /v1/apps/{id}/credentials/\(environment.rawValue))"
    }
}

/// An app's credential could not be read: the database did not answer. Batches of the app wait
/// for it; nothing is rejected for it.
public struct CredentialUnavailable: Error, CustomStringConvertible, Sendable {
    public let appID: UUID
    public let reason: String
    public var description: String { "the APNs credential of app \(appID) cannot be read from the database: \(reason)" }
}

/// An app's credential does not open with the configured master keys (a key left out while
/// rotating, or a row altered). Its batches wait — the notifications are not the sender's to
/// reject — and ``SenderMetrics/batchesWaitingForCredential`` says so.
public struct CredentialSealedOtherwise: Error, CustomStringConvertible, Sendable {
    public let appID: UUID
    public let environment: APNsEnvironment
    public let reason: CredentialCipher.CannotOpen
    public var description: String {
        "the \(environment.rawValue) APNs credential of app \(appID) cannot be decrypted: \(reason)"
    }
}

/// One running ``APNsClient`` per app and environment, made from the credential stored in
/// PostgreSQL (its secret opened with the master key), cached, and replaced when the stored
/// credential changes (checked at most every `refreshInterval`). While the database cannot be
/// read, the client loaded before goes on. A client no batch used for `idleTimeout` is closed
/// (the next batch of its app makes a new one), and at most `maximumClients` run at once (the
/// least recently used closes first), so a sender's memory does not grow with every app it has
/// ever served.
///
/// The secret's format is `APNsCredentialRecord`'s (HeraldStore, `+Sealing`).
///
/// - Important: run it (a `Service`): it runs the clients it makes and stops them at shutdown.
public final class CredentialStore: Service, Sendable {
    private struct Key: Hashable {
        let appID: UUID
        let environment: APNsEnvironment
    }

    private struct Entry {
        let client: APNsClient
        let updatedAt: Date
        var checkedAt: ContinuousClock.Instant
        var lastUsed: ContinuousClock.Instant
    }

    private let repository: CredentialRepository
    private let cipher: CredentialCipher
    private let endpoints: SenderEndpoints
    private let clientConfiguration: APNsClientConfiguration
    private let refreshInterval: Duration
    /// How long a credential look-up waits for the database.
    private let lookupWithin: Duration
    private let logger: Logger
    private let cache = Mutex<[Key: Entry]>([:])
    /// Work for ``run()``: run a new client, or retire a replaced one.
    private enum Job: Sendable {
        case run(APNsClient)
        /// Stopped after `retirementDelay`, so that batches already sending on it finish there.
        case retire(APNsClient)
    }

    private let starts: AsyncStream<Job>
    private let startsContinuation: AsyncStream<Job>.Continuation
    /// How long a replaced client keeps running for the batches already using it.
    private let retirementDelay: Duration
    /// A client unused this long is closed (zero: never).
    private let idleTimeout: Duration
    /// Clients running at once, at most.
    private let maximumClients: Int
    private let evictions = Atomic<Int>(0)

    /// Clients running now.
    public var clientCount: Int { cache.withLock { $0.count } }
    /// Clients closed so far for being idle or the least recently used over the bound.
    public var clientsEvicted: Int { evictions.load(ordering: .relaxed) }

    public init(
        repository: CredentialRepository, cipher: CredentialCipher, endpoints: SenderEndpoints,
        clientConfiguration: APNsClientConfiguration, refreshInterval: Duration = .seconds(30),
        retirementDelay: Duration = .seconds(120), lookupWithin: Duration = .seconds(5),
        idleTimeout: Duration = .seconds(1800), maximumClients: Int = 1000, logger: Logger
    ) {
        self.retirementDelay = retirementDelay
        self.idleTimeout = idleTimeout
        self.maximumClients = max(1, maximumClients)
        self.lookupWithin = lookupWithin
        self.repository = repository
        self.cipher = cipher
        self.endpoints = endpoints
        self.clientConfiguration = clientConfiguration
        self.refreshInterval = refreshInterval
        self.logger = logger
        (starts, startsContinuation) = AsyncStream.makeStream()
    }

    /// Runs every client made, until graceful shutdown.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            if idleTimeout > .zero {
                group.addTask {
                    await cancelWhenGracefulShutdown {
                        let every = max(.milliseconds(100), self.idleTimeout / 4)
                        while !Task.isCancelled {
                            try? await Task.sleep(for: every)
                            self.closeIdleClients()
                        }
                    }
                }
            }
            group.addTask {
                try? await gracefulShutdown()
                self.startsContinuation.finish()
                let clients = self.cache.withLock { cache in
                    defer { cache.removeAll() }
                    return cache.values.map(\.client)
                }
                for client in clients { client.shutdown() }
            }
            for await job in starts {
                switch job {
                case .run(let client):
                    group.addTask { try? await client.run() }
                case .retire(let client):
                    let delay = retirementDelay
                    group.addTask {
                        try? await Task.sleep(for: delay)
                        client.shutdown()
                    }
                }
            }
        }
    }

    /// The client for `appID` in `environment`.
    /// - Throws: ``MissingCredential``; ``CredentialUnavailable`` when the database cannot be read
    ///   and no client was loaded before; ``CredentialSealedOtherwise`` when the stored secret
    ///   does not open with the configured master keys; ``APNsCredentialError`` when it cannot
    ///   be used.
    public func client(appID: UUID, environment: APNsEnvironment) async throws -> APNsClient {
        let key = Key(appID: appID, environment: environment)
        let now = ContinuousClock.now
        let fresh: APNsClient? = cache.withLock { cache in
            guard var entry = cache[key], now - entry.checkedAt < refreshInterval else { return nil }
            entry.lastUsed = now
            cache[key] = entry
            return entry.client
        }
        if let fresh { return fresh }

        let records: [APNsCredentialRecord]
        do {
            records = try await repository.credentials(appID: appID, answerWithin: lookupWithin)
        } catch {
            // The database cannot say whether the credential changed: the client in use goes on
            // (checked again after `refreshInterval`); without one, the caller waits for the database.
            let inUse: APNsClient? = cache.withLock { cache in
                guard var entry = cache[key] else { return nil }
                entry.checkedAt = now
                entry.lastUsed = now
                cache[key] = entry
                return entry.client
            }
            logger.warning(
                "cannot read APNs credentials from the database",
                metadata: [
                    "app": "\(appID)", "environment": "\(environment.rawValue)",
                    "error": "\(HeraldDatabase.describe(error))",
                    "using": "\(inUse == nil ? "nothing yet" : "the credential loaded before")",
                ])
            guard let inUse else { throw CredentialUnavailable(appID: appID, reason: HeraldDatabase.describe(error)) }
            return inUse
        }
        guard let record = records.first(where: { $0.environment == environment }) else {
            throw MissingCredential(appID: appID, environment: environment)
        }
        let cached: APNsClient? = cache.withLock { cache in
            guard var entry = cache[key], entry.updatedAt == record.updatedAt else { return nil }
            entry.checkedAt = now
            entry.lastUsed = now
            cache[key] = entry
            return entry.client
        }
        if let cached { return cached }

        let client = try APNsClient(
            endpoint: environment == .production ? endpoints.production : endpoints.sandbox,
            credential: try credential(from: record), configuration: clientConfiguration,
            logger: logger)
        // Another batch may have loaded the same credential meanwhile: keep the first client (this
        // one never started, so dropping it costs nothing).
        let (winner, replaced): (APNsClient, [APNsClient]) = cache.withLock { cache in
            if let existing = cache[key], existing.updatedAt == record.updatedAt { return (existing.client, []) }
            var replaced = cache[key].map { [$0.client] } ?? []
            cache[key] = Entry(client: client, updatedAt: record.updatedAt, checkedAt: now, lastUsed: now)
            // Over the bound: the least recently used clients close.
            while cache.count > maximumClients, let oldest = cache.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                cache[oldest.key] = nil
                replaced.append(oldest.value.client)
                evictions.add(1, ordering: .relaxed)
            }
            return (client, replaced)
        }
        guard winner === client else { return winner }
        startsContinuation.yield(.run(client))
        for client in replaced { startsContinuation.yield(.retire(client)) }
        logger.info(
            "APNs credential loaded",
            metadata: [
                "app": "\(appID)", "environment": "\(environment.rawValue)", "kind": "\(record.kind.rawValue)",
                "key-id": "\(record.keyID ?? "-")",
            ])
        return client
    }

    /// Closes the clients no batch used for `idleTimeout` (after the retirement delay, so that a
    /// batch that took one just now still finishes on it).
    func closeIdleClients(now: ContinuousClock.Instant = .now) {
        let idle: [(Key, APNsClient)] = cache.withLock { cache in
            let idle = cache.filter { now - $0.value.lastUsed >= idleTimeout }
            for key in idle.keys { cache[key] = nil }
            return idle.map { ($0.key, $0.value.client) }
        }
        for (key, client) in idle {
            evictions.add(1, ordering: .relaxed)
            startsContinuation.yield(.retire(client))
            logger.info(
                "APNs client idle; closing it",
                metadata: ["app": "\(key.appID)", "environment": "\(key.environment.rawValue)"])
        }
    }

    /// Connection gauges per app and environment, in Prometheus text format.
    public func prometheusText() -> String {
        let clients = cache.withLock { $0.map { ($0.key, $0.value.client) } }
        let sorted = clients.sorted { "\($0.0.appID)" < "\($1.0.appID)" }.map { (key: $0.0, status: $0.1.status) }
        var text = PrometheusText()
        func family(_ name: String, help: String, _ value: ((streamLimits: [Int], inFlight: Int)) -> Int) {
            text.family(name, .gauge, help: help)
            for (key, status) in sorted {
                text.sample(
                    name, ["app": "\(key.appID)", "environment": key.environment.rawValue], value: value(status))
            }
        }
        family("herald_sender_apns_connections", help: "Open APNs connections per app and environment.") {
            $0.streamLimits.filter { $0 > 0 }.count
        }
        family("herald_sender_apns_stream_limit", help: "Sum of the servers' SETTINGS_MAX_CONCURRENT_STREAMS.") {
            $0.streamLimits.reduce(0, +)
        }
        family("herald_sender_apns_in_flight", help: "Notifications in flight.") { $0.inFlight }
        text.single(
            "herald_sender_apns_clients", .gauge, help: "APNs clients running (one per app and environment in use).",
            value: clients.count)
        text.single(
            "herald_sender_apns_clients_evicted_total", .counter,
            help: "APNs clients closed for being idle, or the least recently used over HERALD_SENDER_APNS_MAX_CLIENTS.",
            value: clientsEvicted)
        return text.text
    }

    private func credential(from record: APNsCredentialRecord) throws -> APNsCredential {
        let secret: [UInt8]
        do {
            secret = try record.openSecret(with: cipher)
        } catch {
            throw CredentialSealedOtherwise(appID: record.appID, environment: record.environment, reason: error)
        }
        let text = String(decoding: secret, as: UTF8.self)
        switch record.kind {
        case .token:
            guard let keyID = record.keyID, let teamID = record.teamID else {
                throw APNsCredentialError("the token credential of app \(record.appID) has no key id or team id")
            }
            return .token(try APNsSigningKey(pem: text, keyID: keyID, teamID: teamID))
        case .certificate:
            guard let lastCertificateEnd = text.range(of: "-----END CERTIFICATE-----", options: .backwards),
                let keyStart = text.range(of: "-----BEGIN", range: lastCertificateEnd.upperBound..<text.endIndex)
            else {
                throw APNsCredentialError(
                    "the certificate credential of app \(record.appID) holds no private key after its certificate")
            }
            let certificates = String(text[..<keyStart.lowerBound])
            let privateKey = String(text[keyStart.lowerBound...])
            return try APNsCredential.certificate(pemCertificate: certificates, pemPrivateKey: privateKey)
        }
    }
}

extension APNsEnvironment {
    init?(_ record: Herald_V1_ApnsEnvironment) {
        switch record {
        case .production: self = .production
        case .sandbox: self = .sandbox
        default: return nil
        }
    }
}
