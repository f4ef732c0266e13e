import Foundation
import HTTPTypes
import HeraldAccess
import HeraldMetrics
import OpenAPIRuntime
import Synchronization

/// herald-api's Prometheus metrics: requests by operation and status, their latency, pushes
/// accepted.
final class APIMetrics: Sendable {
    static let latencyBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

    private struct RequestKey: Hashable {
        var operationID: String
        var status: Int
    }

    private struct State {
        var requests: [RequestKey: Int] = [:]
        /// Per operation (operation ids come from the contract: a bounded set).
        var latency: [String: Histogram] = [:]
    }

    let pushesAccepted = Atomic<Int>(0)
    /// Requests whose key or admin token was not known (401 `unknown_key`), those refused because
    /// their source failed to authenticate too often (429), and keys looked up in the database.
    let access = AccessCounters()
    /// Where the live progress gauges come from (set once the server exists).
    let progressHub = Mutex<PushProgressHub?>(nil)
    /// Device imports uploading (holding their app's import lock).
    let importsRunning = Atomic<Int>(0)
    /// New devices refused because their app has its quota of active devices (403).
    let deviceQuotaRefusals = Atomic<Int>(0)
    /// Where the quota gauge comes from (set once the server exists).
    let deviceQuota = Mutex<DeviceQuota?>(nil)
    /// Engagement events stored as new, and those counted before (`POST /v1/events`).
    let engagementEventsCounted = Atomic<Int>(0)
    let engagementEventsDuplicate = Atomic<Int>(0)
    private let state = Mutex(State())

    func record(operationID: String, status: Int, seconds: Double) {
        state.withLock { state in
            state.requests[RequestKey(operationID: operationID, status: status), default: 0] += 1
            state.latency[operationID, default: Histogram(bounds: APIMetrics.latencyBuckets)].observe(seconds)
        }
    }

    func engagementEvents(counted: Int, duplicates: Int) {
        engagementEventsCounted.add(counted, ordering: .relaxed)
        engagementEventsDuplicate.add(duplicates, ordering: .relaxed)
    }

    func prometheusText() -> String {
        let snapshot = state.withLock { $0 }
        var text = PrometheusText()
        text.family("herald_api_requests_total", .counter, help: "Requests answered, by operation and HTTP status.")
        let sorted = snapshot.requests.sorted {
            ($0.key.operationID, $0.key.status) < ($1.key.operationID, $1.key.status)
        }
        for (key, count) in sorted {
            text.sample(
                "herald_api_requests_total", ["operation": key.operationID, "status": "\(key.status)"], value: count)
        }
        text.family("herald_api_request_seconds", .histogram, help: "Time to answer a request, by operation.")
        for (operation, latency) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            latency.writeSamples(to: &text, name: "herald_api_request_seconds", label: ("operation", operation))
        }
        text.single(
            "herald_api_pushes_accepted_total", .counter, help: "Pushes accepted (idempotent replays not counted).",
            value: pushesAccepted.load(ordering: .relaxed))
        text.single(
            "herald_api_authentication_failures_total", .counter,
            help: "Requests refused 401 because their key or admin token is not known.",
            value: access.authenticationFailures.load(ordering: .relaxed))
        text.single(
            "herald_api_authentication_throttled_total", .counter,
            help: "Requests refused 429 because their source address failed to authenticate too often.",
            value: access.authenticationThrottled.load(ordering: .relaxed))
        let hub = progressHub.withLock { $0 }
        text.single(
            "herald_api_progress_streams", .gauge, help: "Live progress streams (Server-Sent Events) open.",
            value: hub?.streams ?? 0)
        text.single(
            "herald_api_progress_polls_total", .counter,
            help: "Database polls for live progress (one per watched push per half second, however many streams).",
            value: hub?.polls.load(ordering: .relaxed) ?? 0)
        text.single(
            "herald_api_imports_running", .gauge, help: "Device imports uploading now.",
            value: importsRunning.load(ordering: .relaxed))
        text.single(
            "herald_api_key_lookups_total", .counter, help: "App keys looked up in the database (cache misses).",
            value: access.keyLookups.load(ordering: .relaxed))
        text.single(
            "herald_api_device_quota_refusals_total", .counter,
            help: "New devices refused 403 device_quota_reached: their app has its quota of active devices.",
            value: deviceQuotaRefusals.load(ordering: .relaxed))
        text.single(
            "herald_api_device_quota_used_ratio", .gauge,
            help:
                "The highest share of the active-device quota an app that registered lately uses (0 without a quota).",
            value: deviceQuota.withLock { $0 }?.highestShare ?? 0)
        text.family(
            "herald_api_engagement_events_total", .counter,
            help: "Engagement events reported by devices: counted (new) or duplicate (counted before).")
        text.sample(
            "herald_api_engagement_events_total", ["result": "counted"],
            value: engagementEventsCounted.load(ordering: .relaxed))
        text.sample(
            "herald_api_engagement_events_total", ["result": "duplicate"],
            value: engagementEventsDuplicate.load(ordering: .relaxed))
        return text.text
    }
}

/// Counts every operation's answer and how long it took.
struct MetricsMiddleware: ServerMiddleware {
    let metrics: APIMetrics

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let start = ContinuousClock.now
        let (response, responseBody) = try await next(request, body, metadata)
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        metrics.record(operationID: operationID, status: response.status.code, seconds: seconds)
        return (response, responseBody)
    }
}
