import Foundation
import HeraldAPNsVocabulary
import HeraldMetrics
import Synchronization

/// A notification the simulator accepted: what a phone would have received.
public struct RecordedNotification: Codable, Sendable, Hashable {
    public var token: String
    public var topic: String
    public var apnsID: String
    public var collapseID: String?
    public var pushType: String
    public var priority: Int
    /// `apns-expiration` as sent (seconds since 1970; 0 = deliver once), nil if absent.
    public var expiration: Int64?
    public var payload: String
    /// When the simulator accepted it, milliseconds since 1970.
    public var receivedAt: Int64
    /// With the latency fault set: when its answer was due (`receivedAt` plus the fault's delay,
    /// rounded up to the millisecond) — Apple's round trip, before which no phone could have it.
    /// Nil without the fault (a phone could have it at `receivedAt`).
    public var deliverableAt: Int64?
}

/// How much the simulator keeps of what it accepts.
public enum RecordingMode: String, Sendable, Codable, CaseIterable {
    /// Every accepted notification, in memory (and in the NDJSON file, if one is set).
    case full
    /// Counters only: for benchmarks, where keeping millions of payloads would measure memory.
    case counts
}

/// Counts per status, reason and topic, and the accepted notifications; shared by all
/// connections and read through the admin endpoint.
public final class APNsLedger: Sendable {
    /// The counters as the admin endpoint shows them.
    public struct Counts: Codable, Sendable, Equatable {
        public var requests = 0
        public var accepted = 0
        public var byStatus: [String: Int] = [:]
        public var byReason: [String: Int] = [:]
        public var acceptedByTopic: [String: Int] = [:]
        public var rejectedByTopic: [String: Int] = [:]
        public var connectionsOpened = 0
        public var connectionsOpen = 0
        /// Answers the latency fault held back when their connection closed: never sent.
        public var answersDroppedOnClose = 0
    }

    private struct State {
        var counts = Counts()
        var notifications: [RecordedNotification] = []
        var pendingFileBytes: [UInt8] = []
    }

    public let mode: RecordingMode
    private let state = Mutex(State())
    private let file: FileHandle?
    private let encoder: JSONEncoder

    /// - Parameter recordFile: an NDJSON file every accepted notification is appended to
    ///   (`full` mode only); created or truncated.
    /// - Throws: ``APNsSimulatorError`` when the file cannot be created.
    public init(mode: RecordingMode, recordFile: String? = nil) throws {
        self.mode = mode
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        self.encoder = encoder
        if let recordFile, mode == .full {
            guard FileManager.default.createFile(atPath: recordFile, contents: nil),
                let handle = FileHandle(forWritingAtPath: recordFile)
            else {
                throw APNsSimulatorError(
                    "cannot create the record file \(recordFile): check the folder exists and is writable")
            }
            self.file = handle
        } else {
            self.file = nil
        }
    }

    func connectionOpened() {
        state.withLock {
            $0.counts.connectionsOpened += 1
            $0.counts.connectionsOpen += 1
        }
    }

    func connectionClosed(answersDropped: Int = 0) {
        state.withLock {
            $0.counts.connectionsOpen -= 1
            $0.counts.answersDroppedOnClose += answersDropped
        }
    }

    func rejected(_ reason: APNsReason, topic: Substring?) {
        state.withLock { state in
            state.counts.requests += 1
            state.counts.byStatus[String(reason.status), default: 0] += 1
            state.counts.byReason[reason.description, default: 0] += 1
            if let topic { state.counts.rejectedByTopic[String(topic), default: 0] += 1 }
        }
    }

    /// Counts an acceptance; `notification` is made only in `full` mode (the caller checks
    /// ``mode`` first).
    func accepted(topic: Substring, notification: RecordedNotification?) {
        var line: [UInt8] = []
        if let notification, file != nil, let json = try? encoder.encode(notification) {
            line = Array(json)
            line.append(UInt8(ascii: "\n"))
        }
        let flush: [UInt8]? = state.withLock { state in
            state.counts.requests += 1
            state.counts.accepted += 1
            state.counts.acceptedByTopic[String(topic), default: 0] += 1
            if let notification { state.notifications.append(notification) }
            guard !line.isEmpty else { return nil }
            state.pendingFileBytes.append(contentsOf: line)
            guard state.pendingFileBytes.count >= 64 * 1024 else { return nil }
            defer { state.pendingFileBytes.removeAll(keepingCapacity: true) }
            return state.pendingFileBytes
        }
        if let flush { file?.write(Data(flush)) }
    }

    /// The counters now (`byStatus["200"]` is filled in from `accepted` here, not per request).
    public var counts: Counts {
        var counts = state.withLock { $0.counts }
        if counts.accepted > 0 { counts.byStatus["200"] = counts.accepted }
        return counts
    }

    /// Accepted notifications (full mode), oldest first, optionally only those for `token`.
    /// - Parameters:
    ///   - after: skip the first `after` notifications recorded (a reader that polls passes how
    ///     many it has read, and gets only the new ones).
    ///   - limit: look at no more than this many recorded notifications after those (before the
    ///     token filter, so a reader's next `after` is `after + limit` when it got a full page).
    public func notifications(token: String? = nil, after: Int = 0, limit: Int = .max) -> [RecordedNotification] {
        let recent = state.withLock { Array($0.notifications.dropFirst(after).prefix(limit)) }
        guard let token else { return recent }
        return recent.filter { $0.token == token.lowercased() }
    }

    /// Writes buffered NDJSON lines to the record file.
    public func flush() {
        let pending = state.withLock { state -> [UInt8] in
            defer { state.pendingFileBytes.removeAll(keepingCapacity: true) }
            return state.pendingFileBytes
        }
        if !pending.isEmpty { file?.write(Data(pending)) }
    }

    /// Forgets every notification and counter except the connection gauges.
    public func reset() {
        state.withLock { state in
            let open = state.counts.connectionsOpen
            state.counts = Counts()
            state.counts.connectionsOpen = open
            state.notifications.removeAll()
        }
    }

    /// The counters in Prometheus text exposition format.
    public func prometheusText() -> String {
        let counts = self.counts
        var text = PrometheusText()
        text.family("apns_sim_requests_total", .counter, help: "Requests answered, by status and reason.")
        text.sample("apns_sim_requests_total", ["status": "200", "reason": ""], value: counts.accepted)
        for (reason, count) in counts.byReason.sorted(by: { $0.key < $1.key }) {
            text.sample(
                "apns_sim_requests_total", ["status": "\(APNsReason(reason).status)", "reason": reason], value: count)
        }
        text.family("apns_sim_accepted_total", .counter, help: "Notifications accepted, by topic.")
        for (topic, count) in counts.acceptedByTopic.sorted(by: { $0.key < $1.key }) {
            text.sample("apns_sim_accepted_total", ["topic": topic], value: count)
        }
        text.family("apns_sim_rejected_total", .counter, help: "Requests rejected, by topic.")
        for (topic, count) in counts.rejectedByTopic.sorted(by: { $0.key < $1.key }) {
            text.sample("apns_sim_rejected_total", ["topic": topic], value: count)
        }
        text.single(
            "apns_sim_connections_opened_total", .counter, help: "Connections accepted.",
            value: counts.connectionsOpened)
        text.single("apns_sim_connections_open", .gauge, help: "Connections open now.", value: counts.connectionsOpen)
        text.single(
            "apns_sim_answers_dropped_total", .counter,
            help: "Answers held back by the latency fault whose connection closed first (never sent).",
            value: counts.answersDroppedOnClose)
        return text.text
    }
}
