import APNsSimulator
import Foundation
import HeraldHTTP2
import NIOCore
import Testing

/// Stream limits and injected faults, seen from Herald's HTTP/2 client.
@Suite("apns-sim stream limits and faults")
struct StreamsAndFaultsTests {
    @Test("a connection is allowed 1 stream until it authenticates, then the configured number")
    func streamLimitRisesAfterAuthentication() async throws {
        let configuration = Fixture.configuration { $0.maxConcurrentStreams = 250 }
        try await withSimulator(configuration) { simulator in
            let connection = try await connect(to: simulator)
            #expect(connection.maxConcurrentStreams == 1)
            let refused = try await connection.send(notification(authorization: nil), timeout: .seconds(5))
            #expect(refused.status == 403)
            #expect(connection.maxConcurrentStreams == 1)
            #expect(
                try await connection.send(notification(authorization: try providerToken()), timeout: .seconds(5)).status
                    == 200)
            #expect(await eventually { connection.maxConcurrentStreams == 250 })
            await connection.close()
        }
    }

    @Test("many concurrent requests on one connection and on four: every one answered, none lost")
    func concurrentRequests() async throws {
        try await withSimulator { simulator in
            let token = try providerToken()
            var connections: [HTTP2ClientConnection] = []
            for _ in 0..<4 { connections.append(try await connect(to: simulator)) }
            // The first request on each connection authenticates it (the limit starts at 1).
            for connection in connections {
                #expect(
                    try await connection.send(notification(authorization: token), timeout: .seconds(5)).status == 200)
            }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<2000 {
                    let connection = connections[index % 4]
                    let device = index % 10 == 0 ? Fixture.unregistered : Fixture.deliverable
                    group.addTask {
                        try await connection.send(notification(to: device, authorization: token), timeout: .seconds(20))
                            .status
                    }
                }
                return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            }
            #expect(statuses[200] == 1800)
            #expect(statuses[410] == 200)
            #expect(simulator.ledger.counts.accepted == 1804)
            #expect(simulator.ledger.notifications().count == 1804)
            for connection in connections { await connection.close() }
        }
    }

    @Test("503 Shutdown is followed by GOAWAY; requests after it fail as not processed")
    func shutdownThenGoAway() async throws {
        try await withSimulator { simulator in
            let connection = try await connect(to: simulator)
            let token = try providerToken()
            #expect(try await connection.send(notification(authorization: token), timeout: .seconds(5)).status == 200)
            var faults = APNsFaults()
            faults.shutdown = true
            simulator.faults = faults
            let response = try await connection.send(notification(authorization: token), timeout: .seconds(5))
            #expect(response.status == 503)
            #expect(response.reason == "Shutdown")
            #expect(await eventually { connection.goAway != nil })
            #expect(connection.goAway?.errorCode == .noError)
            #expect(connection.goAway?.debugText.contains("Shutdown") == true)
            #expect(connection.isAcceptingRequests == false)
            await #expect {
                _ = try await connection.send(notification(authorization: token), timeout: .seconds(5))
            } throws: { error in
                (error as? HTTP2Error)?.requestWasNotProcessed == true
            }
            await connection.waitUntilClosed()
        }
    }

    @Test("GOAWAY after N requests names the last processed stream; streams above it are reported unprocessed")
    func goAwayAfterRequests() async throws {
        var faults = APNsFaults()
        faults.goAwayAfterRequests = 5
        try await withSimulator(Fixture.configuration { $0.faults = faults }) { simulator in
            let connection = try await connect(to: simulator)
            let token = try providerToken()
            #expect(try await connection.send(notification(authorization: token), timeout: .seconds(5)).status == 200)
            #expect(await eventually { connection.maxConcurrentStreams == 1000 })
            let results = await withTaskGroup(of: Result<Int, HTTP2Error>.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        do {
                            return .success(
                                try await connection.send(notification(authorization: token), timeout: .seconds(10))
                                    .status)
                        } catch { return .failure(error as! HTTP2Error) }
                    }
                }
                return await group.reduce(into: [Result<Int, HTTP2Error>]()) { $0.append($1) }
            }
            let answered = results.filter { if case .success(200) = $0 { true } else { false } }.count
            let unprocessed = results.filter {
                if case .failure(let error) = $0 { error.requestWasNotProcessed } else { false }
            }.count
            #expect(answered == 4)  // 5 in all on this connection, the first above
            #expect(unprocessed == 16)
            // GOAWAY follows the answer on stream 9, so it may arrive just after the refusals.
            #expect(await eventually { connection.goAway != nil })
            #expect(connection.goAway?.lastStreamID == 9)  // streams 1, 3, 5, 7, 9
            #expect(simulator.ledger.counts.accepted == 5)
        }
    }

    @Test("fractions of 429, 500 and 503 answer with Apple's reasons, and nothing is recorded for them")
    func errorFractions() async throws {
        try await withSimulator { simulator in
            let connection = try await connect(to: simulator)
            let token = try providerToken()
            #expect(try await connection.send(notification(authorization: token), timeout: .seconds(5)).status == 200)
            for (fraction, status, reason) in [
                (\APNsFaults.tooManyRequests, 429, "TooManyRequests"),
                (\APNsFaults.internalServerError, 500, "InternalServerError"),
                (\APNsFaults.serviceUnavailable, 503, "ServiceUnavailable"),
            ] {
                var faults = APNsFaults()
                faults[keyPath: fraction] = 1
                simulator.faults = faults
                let response = try await connection.send(notification(authorization: token), timeout: .seconds(5))
                #expect(response.status == status)
                #expect(response.reason == reason)
            }
            var half = APNsFaults()
            half.serviceUnavailable = 0.5
            simulator.faults = half
            var unavailable = 0
            for _ in 0..<400
            where try await connection.send(notification(authorization: token), timeout: .seconds(5)).status == 503 {
                unavailable += 1
            }
            #expect((120...280).contains(unavailable))
            #expect(simulator.ledger.counts.accepted == 1 + 400 - unavailable)
            await connection.close()
        }
    }

    @Test("a stream that is never answered ends at the client's deadline; a dropped connection fails its requests")
    func neverAnswerAndDrop() async throws {
        try await withSimulator { simulator in
            let connection = try await connect(to: simulator)
            let token = try providerToken()
            #expect(try await connection.send(notification(authorization: token), timeout: .seconds(5)).status == 200)
            var faults = APNsFaults()
            faults.neverAnswer = 1
            simulator.faults = faults
            await #expect {
                _ = try await connection.send(notification(authorization: token), timeout: .milliseconds(200))
            } throws: { error in
                (error as? HTTP2Error)?.kind == .deadlineExceeded
            }
            // The connection still works after a deadline.
            simulator.faults = APNsFaults()
            #expect(try await connection.send(notification(authorization: token), timeout: .seconds(5)).status == 200)
            faults = APNsFaults()
            faults.dropConnection = 1
            simulator.faults = faults
            await #expect {
                _ = try await connection.send(notification(authorization: token), timeout: .seconds(5))
            } throws: { error in
                (error as? HTTP2Error)?.kind == .connectionClosed
            }
            #expect(connection.isAcceptingRequests == false)
        }
    }

    @Test("added latency delays answers by at least the configured time; the record says when the answer was due")
    func latency() async throws {
        var faults = APNsFaults()
        faults.latency = .init(distribution: .fixed, milliseconds: 150)
        try await withSimulator(Fixture.configuration { $0.faults = faults }) { simulator in
            let connection = try await connect(to: simulator)
            let authorization = try providerToken()
            let clock = ContinuousClock()
            let start = clock.now
            #expect(
                try await connection.send(notification(authorization: authorization), timeout: .seconds(5)).status
                    == 200)
            #expect(clock.now - start >= .milliseconds(150))
            // A phone could not have had it before Apple's round trip: 150 ms after it arrived.
            let recorded = try #require(simulator.ledger.notifications().first)
            #expect(recorded.deliverableAt == recorded.receivedAt + 150)

            // Without the fault a notification is a phone's as it arrives: no second time.
            simulator.faults = APNsFaults()
            #expect(
                try await connection.send(notification(authorization: authorization), timeout: .seconds(5)).status
                    == 200)
            #expect(simulator.ledger.notifications().last?.deliverableAt == nil)
            await connection.close()
        }
    }

    @Test("a client that disconnects while its answers are delayed: they are dropped unsent, apns-sim keeps serving")
    func disconnectWhileAnswersAreDelayed() async throws {
        var faults = APNsFaults()
        faults.latency = .init(distribution: .fixed, milliseconds: 2000)
        try await withSimulator(Fixture.configuration { $0.faults = faults }) { simulator in
            let connection = try await connect(to: simulator)
            let authorization = try providerToken()
            // The first request authenticates the connection (one stream until then).
            #expect(
                try await connection.send(notification(authorization: authorization), timeout: .seconds(10)).status
                    == 200)
            let sending = Task {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<20 {
                        group.addTask {
                            _ = try? await connection.send(
                                notification(authorization: authorization), timeout: .seconds(5))
                        }
                    }
                }
            }
            // Close once apns-sim has every request (counted when it arrives, answered 2 s later,
            // room enough on a loaded machine): a fixed pause was too short for one.
            let deadline = ContinuousClock.now + .seconds(30)
            while simulator.ledger.counts.requests < 21, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            try #require(simulator.ledger.counts.requests == 21, "apns-sim had every request before the close")
            await connection.close()
            await sending.value
            // The held-back answers are cancelled with the connection (counted as it closes), not
            // sent to a connection that is gone.
            #expect(try await eventually { simulator.ledger.counts.answersDroppedOnClose == 20 })
            let again = try await connect(to: simulator)
            #expect(
                try await again.send(notification(authorization: authorization), timeout: .seconds(5)).status == 200)
            await again.close()
        }
    }

    @Test("out-of-range faults are refused with the field named")
    func invalidFaults() throws {
        var faults = APNsFaults()
        faults.serviceUnavailable = 1.5
        #expect(throws: APNsSimulatorError.self) { try faults.validate() }
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(APNsFaults.self, from: Data(#"{"goAwayAfterRequests":0}"#.utf8))
        }
        let decoded = try JSONDecoder().decode(APNsFaults.self, from: Data(#"{"tooManyRequests":0.25}"#.utf8))
        #expect(decoded.tooManyRequests == 0.25)
        #expect(decoded.shutdown == false)
    }

    @Test("PING is answered and measured")
    func ping() async throws {
        try await withSimulator { simulator in
            let connection = try await connect(to: simulator)
            let roundTrip = try await connection.ping()
            #expect(roundTrip > .zero)
            #expect(roundTrip < .seconds(5))
            await connection.close()
        }
    }
}
