import HeraldAPNsVocabulary
import HeraldHTTP2
import NIOCore
import NIOSSL
import SwiftASN1
import X509

#if canImport(Glibc)
import Glibc
#endif

/// One client connection to the simulator: authenticates it, validates each request as APNs
/// does, applies faults, answers and records. Lives on the connection's event loop.
final class APNsSimulatorConnection: HTTP2ServerConnectionDelegate {
    private enum Outcome {
        case accept(apnsID: String)
        case reject(APNsReason, timestamp: Int64? = nil)
    }

    /// The connection this delegate serves. It owns the delegate and outlives every call into
    /// it until it closes, so the reference needs no reference counting (`unowned(safe)` would
    /// cost two atomic operations per use on the hot path). After ``connectionDidClose(_:)`` it
    /// may be gone: nothing touches it then (`isClosed`; delayed answers are cancelled).
    private unowned(unsafe) let connection: HTTP2ServerConnection
    /// The connection closed: nothing may use `connection` any more.
    private var isClosed = false
    /// Answers held back by the latency fault, by stream; cancelled when the connection closes.
    private var delayedAnswers: [Int32: Scheduled<Void>] = [:]
    private let state: APNsSimulatorState
    /// The provider token in use on this connection and what it verified to.
    private var currentToken: [UInt8] = []
    private var currentVerification: VerifiedProviderToken?
    private var currentTokenSince = NIODeadline.uptimeNanoseconds(0)
    /// The last token that failed verification, so a client retrying it costs no new check.
    private var lastRejectedToken: [UInt8] = []
    private var rejectedReason = APNsReason.invalidProviderToken
    /// The client certificate's topic, for certificate-based authentication (checked once).
    private lazy var certificateTopic: Result<String, APNsReason>? = Self.topic(of: connection.peerCertificate)
    private var raisedStreamLimit = false
    private var answered = 0
    private var goingAwayAfter: Int32?
    private var random: SimulatorRandom
    /// The faults as last read, and the version they were read at.
    private var faults = APNsFaults()
    private var faultsVersion = -1

    init(connection: HTTP2ServerConnection, state: APNsSimulatorState) {
        self.connection = connection
        self.state = state
        self.random = SimulatorRandom(
            seed: UInt64(truncatingIfNeeded: ObjectIdentifier(connection).hashValue)
                ^ UInt64(NIODeadline.now().uptimeNanoseconds))
        state.ledger.connectionOpened()
    }

    func connectionDidClose(_ connection: HTTP2ServerConnection) {
        isClosed = true
        for answer in delayedAnswers.values { answer.cancel() }
        state.ledger.connectionClosed(answersDropped: delayedAnswers.count)
        delayedAnswers.removeAll()
    }

    func connection(_ connection: HTTP2ServerConnection, didReceive request: HTTP2ServerRequest) {
        if let goingAwayAfter, request.streamID > goingAwayAfter { return }
        let version = state.faultsVersion.load(ordering: .acquiring)
        if version != faultsVersion {
            faultsVersion = version
            faults = state.faults
        }
        let faults = self.faults
        var topicForCounts: Substring?
        // Read once; validation, the answer and the record all use it.
        let headers = APNsRequestHeaders(request.headers, currentToken: currentToken)
        let outcome = evaluate(request, headers, topic: &topicForCounts)

        if case .accept = outcome, faults.drawsRandomFaults {
            if random.chance(faults.dropConnection) {
                connection.close()
                return
            }
            if random.chance(faults.neverAnswer) { return }
        }
        var final = outcome
        if faults.shutdown {
            final = .reject(.shutdown)
        } else if case .accept = outcome, faults.drawsRandomFaults {
            if random.chance(faults.tooManyRequests) {
                final = .reject(.tooManyRequests)
            } else if random.chance(faults.internalServerError) {
                final = .reject(.internalServerError)
            } else if random.chance(faults.serviceUnavailable) {
                final = .reject(.serviceUnavailable)
            }
        }

        let apnsID: String
        switch final {
        case .accept(let id):
            apnsID = id
        case .reject(let reason, _):
            apnsID = headers.apnsID.flatMap { APNsRequestRules.isUUID($0) ? $0 : nil } ?? random.uuidString()
            state.ledger.rejected(reason, topic: topicForCounts)
        }
        let delay = faults.latencyNanoseconds { random.unitInterval() }
        if case .accept = final {
            record(request, headers, apnsID: apnsID, topic: topicForCounts ?? "", answeredAfter: delay)
        }

        if delay > 0 {
            let streamID = request.streamID
            delayedAnswers[streamID] = connection.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(delay)) {
                self.delayedAnswers[streamID] = nil
                // Cancelled on close; and should it run all the same, the connection may be gone.
                guard !self.isClosed else { return }
                self.answer(streamID, final, apnsID: apnsID, faults: faults)
            }
        } else {
            answer(request.streamID, final, apnsID: apnsID, faults: faults)
        }
    }

    private func answer(_ streamID: Int32, _ outcome: Outcome, apnsID: String, faults: APNsFaults) {
        switch outcome {
        case .accept:
            connection.respond(streamID: streamID, status: 200) { $0.add("apns-id", apnsID, neverIndexed: true) }
        case .reject(let reason, let timestamp):
            var body = reason.body
            if let timestamp {
                body = ByteBuffer(string: #"{"reason":"\#(reason.description)","timestamp":\#(timestamp)}"#)
            }
            connection.respond(
                streamID: streamID, status: reason.status,
                headers: [
                    HTTP2HeaderField("apns-id", apnsID, neverIndexed: true),
                    HTTP2HeaderField("content-type", "application/json"),
                ], body: body)
            if reason == .shutdown {
                goingAwayAfter = streamID
                connection.goAway(
                    errorCode: .noError, debugData: Array(#"{"reason":"Shutdown"}"#.utf8), lastStreamID: streamID)
                return
            }
        }
        answered += 1
        if let limit = faults.goAwayAfterRequests, answered >= limit, goingAwayAfter == nil {
            goingAwayAfter = streamID
            connection.goAway(errorCode: .noError, lastStreamID: streamID)
        }
    }

    // MARK: Validation, in the order APNs applies it

    private func evaluate(
        _ request: HTTP2ServerRequest, _ headers: APNsRequestHeaders, topic topicForCounts: inout Substring?
    ) -> Outcome {
        guard headers.method == .post else { return .reject(.methodNotAllowed) }
        if let problem = headers.pathProblem { return .reject(problem) }
        if headers.hasDuplicates { return .reject(.duplicateHeaders) }

        // Authentication: a provider token, or else the client certificate.
        let allowedTopics: Set<String>
        var topic = headers.topic
        switch authenticate(headers.authorization) {
        case .success(let topics): allowedTopics = topics
        case .failure(let reason): return .reject(reason)
        }
        if currentVerification == nil, topic == nil, case .success(let certificateTopic) = certificateTopic {
            topic = certificateTopic  // certificate authentication: the topic defaults to the certificate's
        }
        if !raisedStreamLimit {
            raisedStreamLimit = true
            connection.setMaxConcurrentStreams(state.configuration.maxConcurrentStreams)
        }

        guard let topic else { return .reject(.missingTopic) }
        guard APNsRequestRules.isWellFormedTopic(topic) else { return .reject(.badTopic) }
        let pushType: APNsPushType
        let appTopic: Substring
        switch APNsRequestRules.pushType(headers.pushType, topic: topic) {
        case .success(let result): (pushType, appTopic) = result
        case .failure(let reason): return .reject(reason)
        }
        topicForCounts = appTopic
        if !allowedTopics.isEmpty, pushType != .mdm, !allowedTopics.contains(String(appTopic)) {
            return .reject(.topicDisallowed)
        }
        if let apnsID = headers.apnsID, !APNsRequestRules.isUUID(apnsID) { return .reject(.badMessageId) }
        if case .failure(let reason) = APNsRequestRules.priority(headers.priority) { return .reject(reason) }
        if case .failure(let reason) = APNsRequestRules.expiration(headers.expiration) { return .reject(reason) }
        if let collapseID = headers.collapseID, collapseID.utf8.count > 64 { return .reject(.badCollapseId) }
        if request.bodyLength == 0 { return .reject(.payloadEmpty) }
        if request.bodyLength > pushType.maximumPayloadBytes { return .reject(.payloadTooLarge) }

        let device: DeviceRegistry.Lookup =
            state.devices.acceptsEveryToken
            ? .deliverable
            : request.headers.withValueBytes(of: ":path") { path in
                // Checked above (pathProblem): the path is there and holds a token.
                state.devices.lookup(tokenHex: APNsRequestRules.tokenDigits(inCheckedPath: path!), appTopic: appTopic)
            }
        switch device {
        case .deliverable: return .accept(apnsID: headers.apnsID ?? random.uuidString())
        case .unknown: return .reject(.badDeviceToken)
        case .otherTopic: return .reject(.deviceTokenNotForTopic)
        case .unregistered(let at): return .reject(.unregistered, timestamp: at)
        }
    }

    /// Checks the provider token (verifying each distinct token once per connection) or the
    /// client certificate. Returns the topics the credential may push to (empty: any).
    private func authenticate(_ authorization: APNsRequestHeaders.Authorization) -> Result<Set<String>, APNsReason> {
        let verified: VerifiedProviderToken
        switch authorization {
        case .absent:
            // No provider token: certificate-based authentication, if the client presented one.
            switch certificateTopic {
            case .none: return .failure(.missingProviderToken)
            case .failure(let reason): return .failure(reason)
            case .success(let topic): return .success([topic])
            }
        case .malformed:
            return .failure(.invalidProviderToken)
        case .current:
            guard let currentVerification else { return .failure(.invalidProviderToken) }
            verified = currentVerification
        case .new(let token):
            if token == lastRejectedToken { return .failure(rejectedReason) }
            switch adopt(token) {
            case .success(let value): verified = value
            case .failure(let reason): return .failure(reason)
            }
        }
        let age = Int64(time(nil)) - verified.issuedAt
        if age > state.configuration.providerTokenLifetimeSeconds { return .failure(.expiredProviderToken) }
        return .success(verified.topics)
    }

    /// A token this connection has not seen: verify it and make it the connection's token.
    private func adopt(_ token: [UInt8]) -> Result<VerifiedProviderToken, APNsReason> {
        let text = String(decoding: token, as: UTF8.self)
        switch ProviderTokenVerifier.verify(text[...], keys: state.keys) {
        case .failure(let reason):
            lastRejectedToken = token
            rejectedReason = reason
            return .failure(reason)
        case .success(let verified):
            // An expired token never becomes the connection's token, so the provider's renewed
            // one is not held against the 20-minute rule.
            if Int64(time(nil)) - verified.issuedAt > state.configuration.providerTokenLifetimeSeconds {
                return .failure(.expiredProviderToken)
            }
            let now = NIODeadline.now()
            if let current = currentVerification {
                // One connection, one team; and a new token at most every 20 minutes.
                if current.teamID != verified.teamID { return .failure(.invalidProviderToken) }
                if now - currentTokenSince < TimeAmount(state.configuration.providerTokenUpdateInterval) {
                    return .failure(.tooManyProviderTokenUpdates)
                }
            }
            currentToken = token
            currentVerification = verified
            currentTokenSince = now
            return .success(verified)
        }
    }

    /// Keeps an accepted notification; `delay` is the latency fault's wait before its answer, in
    /// nanoseconds (0 without the fault).
    private func record(
        _ request: HTTP2ServerRequest, _ headers: APNsRequestHeaders, apnsID: String, topic: Substring,
        answeredAfter delay: Int64
    ) {
        guard state.ledger.mode == .full else {
            state.ledger.accepted(topic: topic, notification: nil)
            return
        }
        let now = Self.nowMilliseconds()
        let notification = RecordedNotification(
            token: APNsRequestHeaders.deviceToken(in: request.headers),
            topic: headers.topic ?? String(topic),
            apnsID: apnsID,
            collapseID: headers.collapseID,
            pushType: headers.pushType ?? "alert",
            priority: headers.priority.flatMap(Int.init) ?? 10,
            expiration: headers.expiration.flatMap { Int64($0) },
            payload: String(buffer: request.body),
            receivedAt: now,
            deliverableAt: delay > 0 ? now + (delay + 999_999) / 1_000_000 : nil)
        state.ledger.accepted(topic: topic, notification: notification)
    }

    /// The wall clock in milliseconds since 1970 (what `receivedAt` says: the latency benchmarks
    /// subtract the Open API's 202 from it).
    static func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// The APNs topic a client certificate names: its subject's UID (Apple's push certificates
    /// carry the bundle id there), else its common name without Apple's "Apple Push Services: "
    /// prefix. Nil when the client presented no certificate.
    static func topic(of certificate: NIOSSLCertificate?) -> Result<String, APNsReason>? {
        guard let certificate else { return nil }
        guard let der = try? certificate.toDERBytes(), let parsed = try? Certificate(derEncoded: der) else {
            return .failure(.badCertificate)
        }
        let userID: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]
        var commonName: String?
        for relativeName in parsed.subject {
            for attribute in relativeName {
                if attribute.type == userID { return .success(attribute.value.description) }
                if attribute.type == .RDNAttributeType.commonName { commonName = attribute.value.description }
            }
        }
        guard var name = commonName, !name.isEmpty else { return .failure(.badCertificate) }
        if let range = name.range(of: "Apple Push Services: ") { name = String(name[range.upperBound...]) }
        return APNsRequestRules.isWellFormedTopic(name) ? .success(name) : .failure(.badCertificate)
    }
}

/// A small, fast pseudo-random generator per connection (xorshift64*): fault draws and
/// generated apns-ids need no cryptographic randomness, and a system call per request would
/// cost more than the rest of the request.
struct SimulatorRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }

    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }

    /// Uniform in 0..<1.
    mutating func unitInterval() -> Double { Double(next() >> 11) / Double(1 << 53) }

    mutating func chance(_ probability: Double) -> Bool { probability > 0 && unitInterval() < probability }

    /// A random (version 4) UUID in upper case, as APNs writes apns-id.
    mutating func uuidString() -> String {
        // 128 random bits with the version (4) and variant (10) bits set.
        let high = (next() & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        let low = (next() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return String(unsafeUninitializedCapacity: 36) { text in
            var position = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    let nibble = UInt8((value >> UInt64(shift)) & 0xF)
                    text[position] = nibble < 10 ? nibble + 48 : nibble + 55
                    position += 1
                }
            }
            func dash() {
                text[position] = UInt8(ascii: "-")
                position += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put(high >> 16, nibbles: 4)
            dash()
            put(high, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low, nibbles: 12)
            return 36
        }
    }
}
