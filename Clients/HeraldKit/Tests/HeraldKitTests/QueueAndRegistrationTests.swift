import Foundation
import Testing

@testable import HeraldKit

@Suite("engagement queue, registration record, back-off")
struct QueueAndRegistrationTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func event(_ n: Int, age: TimeInterval = 0) -> EngagementEvent {
        EngagementEvent(pushID: UUID(), token: "AB\(n)", type: .opened, occurredAt: now.addingTimeInterval(-age))
    }

    @Test("batches go oldest first; a stored batch leaves the queue")
    func batches() {
        var queue = EngagementQueue(capacity: 10, batchSize: 2)
        for n in 0..<3 { queue.append(Self.event(n)) }
        let batch = queue.nextBatch(now: Self.now)
        #expect(batch.map(\.token) == ["ab0", "ab1"])
        #expect(queue.stored(count: 2) == .sendNext)
        #expect(queue.nextBatch(now: Self.now).map(\.token) == ["ab2"])
    }

    @Test("no answer, 429 and 5xx keep the batch and wait longer each time, at least Retry-After")
    func retries() {
        var queue = EngagementQueue()
        queue.append(Self.event(0))
        let offline = HeraldAPIError(status: 0, code: "no_answer", message: "")
        #expect(queue.failed(count: 1, with: offline) == .retry(afterSeconds: 2))
        #expect(queue.failed(count: 1, with: offline) == .retry(afterSeconds: 4))
        #expect(
            queue.failed(
                count: 1, with: HeraldAPIError(status: 429, code: "rate_limited", message: "", retryAfterSeconds: 30))
                == .retry(afterSeconds: 30))
        for _ in 0..<20 { _ = queue.failed(count: 1, with: offline) }
        #expect(queue.failed(count: 1, with: offline) == .retry(afterSeconds: 600))
        #expect(queue.events.count == 1)
        #expect(queue.stored(count: 1) == .sendNext)
        #expect(queue.failures == 0)
    }

    @Test("a refusal naming one event drops that one; any other refusal drops the batch")
    func refusals() {
        var queue = EngagementQueue(batchSize: 3)
        for n in 0..<4 { queue.append(Self.event(n)) }
        _ = queue.nextBatch(now: Self.now)
        #expect(
            queue.failed(
                count: 3, with: HeraldAPIError(status: 403, code: "not_sent_to_device", message: "", field: "events[1]")
            )
                == .sendNext)
        #expect(queue.events.map(\.token) == ["ab0", "ab2", "ab3"])
        #expect(
            queue.failed(count: 2, with: HeraldAPIError(status: 400, code: "bad_request", message: "")) == .sendNext)
        #expect(queue.events.map(\.token) == ["ab3"])
        #expect(queue.dropped == 3)
    }

    @Test("the oldest go past the capacity, and events the server would refuse as too old are not sent")
    func bounds() {
        var queue = EngagementQueue(capacity: 2)
        for n in 0..<3 { queue.append(Self.event(n)) }
        #expect(queue.events.map(\.token) == ["ab1", "ab2"])
        queue.append(Self.event(9, age: 8 * 24 * 3600))
        #expect(queue.nextBatch(now: Self.now).map(\.token) == ["ab2"])
        #expect(queue.dropped == 3, "ab0 and ab1 for room, the 8-day-old one for its age")
    }

    @Test("an event encodes as POST /v1/events takes it")
    func eventJSON() throws {
        let id = UUID(uuidString: "1F0C7E5A-0000-4000-8000-000000000001")!
        let event = EngagementEvent(
            pushID: id, token: "ABCD", type: .action, action: "reply", textInput: true,
            occurredAt: Date(timeIntervalSince1970: 1_800_000_000))
        let text = String(decoding: try HeraldAPIClient.encoder.encode(event), as: UTF8.self)
        #expect(
            text
                == #"{"action":"reply","occurred_at":"2027-01-15T08:00:00Z","push_id":"1f0c7e5a-0000-4000-8000-000000000001","text_input":true,"token":"abcd","type":"action"}"#
        )
    }

    @Test("every launch registers; a changed token names the old one as previous_token")
    func registration() throws {
        let empty = RegistrationRecord()
        let first = empty.registration(for: "AAAA", environment: "sandbox")
        #expect(first.token == "aaaa")
        #expect(first.previousToken == nil)
        let record = empty.after(first, at: Self.now)
        #expect(record.registration(for: "aaaa", environment: "sandbox").previousToken == nil)
        var rotated = record.registration(for: "bbbb", environment: "sandbox")
        #expect(rotated.previousToken == "aaaa")
        rotated.alias = "user-1"
        let json = String(decoding: try HeraldAPIClient.encoder.encode(rotated), as: UTF8.self)
        #expect(json == #"{"alias":"user-1","environment":"sandbox","previous_token":"aaaa","token":"bbbb"}"#)
        #expect(record.after(rotated, at: Self.now).alias == "user-1")
    }

    @Test("the back-off's bound doubles from 1 s to 60 s and a draw stays within it")
    func backoff() {
        var backoff = ReconnectBackoff()
        var random = SeededRandom()
        var bounds: [UInt64] = []
        for _ in 0..<8 {
            bounds.append(backoff.boundMilliseconds)
            #expect(backoff.nextWait(using: &random) <= bounds.last!)
        }
        #expect(bounds == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000])
        let draws = (0..<200).map { _ in backoff.nextWait(using: &random) }
        #expect(Set(draws).count > 150, "the waits are spread, not the same")
        #expect(draws.contains { $0 < 30_000 } && draws.contains { $0 > 30_000 })
        #expect(backoff.nextWait(atLeastMilliseconds: 90_000, using: &random) == 90_000)
        backoff.reset()
        #expect(backoff.boundMilliseconds == 1_000)
    }

    @Test("file storage keeps values across instances and replaces them whole")
    func fileStorage() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("heraldkit-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileStorage(directory: directory)
        try storage.save(RegistrationRecord(token: "aa", registeredAt: Self.now), named: "registration")
        let again = try FileStorage(directory: directory)
        #expect(again.load(RegistrationRecord.self, named: "registration")?.token == "aa")
        #expect(again.load(RegistrationRecord.self, named: "missing") == nil)
    }
}
