import HeraldAccess
import HeraldGatewayProtocol
import HeraldMetrics
import Synchronization

/// herald-gateway's counters, rendered as `herald_gateway_*` (docs/operations.md lists them). No
/// label names an app or a device: the label sets are bounded by the protocol's error codes.
final class GatewayMetrics: Sendable {
    /// Connections open now (from accept to close, whatever their stage).
    let openConnections = Atomic<Int>(0)
    let accepted = Atomic<Int>(0)
    /// Closed at accept because the event loop had its maximum of handshakes in progress.
    let refusedHandshakes = Atomic<Int>(0)
    let handshakes = Atomic<Int>(0)
    let handshakeFailures = Atomic<Int>(0)
    let webSocketConnections = Atomic<Int>(0)
    /// Closed before their transport or upgrade was known, at the hello's deadline.
    let helloTimeouts = Atomic<Int>(0)
    let welcomes = Atomic<Int>(0)
    /// Welcomed before their presence was written, after waiting the bound (PostgreSQL slow or away).
    let welcomesBeforePresence = Atomic<Int>(0)
    let framesReceived = Atomic<Int>(0)
    let framesSent = Atomic<Int>(0)
    let pushesSent = Atomic<Int>(0)
    let revokesSent = Atomic<Int>(0)
    let acknowledged = Atomic<Int>(0)
    let fallbacks = Atomic<Int>(0)
    let goaways = Atomic<Int>(0)
    let replaced = Atomic<Int>(0)
    /// Closed before their last error frame was written: the peer took nothing for the ack timeout.
    let closedUnwritten = Atomic<Int>(0)
    /// Hellos naming unknown keys or devices, those throttled, and key look-ups (the key cache's
    /// misses), counted by the shared admission pieces.
    let access = AccessCounters()
    /// Presence batches written, and those PostgreSQL did not take (``PresenceWriter``).
    let presenceBatches = Atomic<Int>(0)
    let presenceWriteFailures = Atomic<Int>(0)
    /// Error frames sent, by code (few: a lock is cheaper than a dictionary of atomics).
    private let errors = Mutex<[GatewayErrorCode: Int]>([:])

    init() {}

    /// Counts an error frame sent.
    func sent(_ code: GatewayErrorCode) {
        errors.withLock { $0[code, default: 0] += 1 }
    }

    func errorCount(_ code: GatewayErrorCode) -> Int {
        errors.withLock { $0[code] ?? 0 }
    }

    /// Everything, with the directory's gauges.
    func prometheusText(devicesConnected: Int, presencePending: Int) -> String {
        var text = PrometheusText()
        func counter(_ name: String, _ help: String, _ value: borrowing Atomic<Int>) {
            text.single(name, .counter, help: help, value: value.load(ordering: .relaxed))
        }
        text.single(
            "herald_gateway_connections", .gauge, help: "Connections open, from accept to close, at any stage.",
            value: openConnections.load(ordering: .relaxed))
        text.single(
            "herald_gateway_devices_connected", .gauge, help: "Devices with a live (welcomed) connection here.",
            value: devicesConnected)
        counter("herald_gateway_connections_accepted_total", "TCP connections accepted.", accepted)
        counter(
            "herald_gateway_connections_refused_handshakes_total",
            "Connections closed at accept: their event loop had its maximum of TLS handshakes in progress.",
            refusedHandshakes)
        counter("herald_gateway_tls_handshakes_total", "TLS handshakes completed.", handshakes)
        counter(
            "herald_gateway_tls_handshake_failures_total",
            "Connections that failed before their TLS handshake completed.", handshakeFailures)
        counter(
            "herald_gateway_websocket_connections_total", "Connections that asked for the WebSocket upgrade.",
            webSocketConnections)
        counter(
            "herald_gateway_hello_timeouts_total",
            "Connections closed at the hello's deadline before their transport was set up.", helloTimeouts)
        counter(
            "herald_gateway_welcomes_total",
            "Connections welcomed: authenticated, once their presence was written (or 5 s later without it).",
            welcomes)
        counter(
            "herald_gateway_welcomes_before_presence_total",
            "Connections welcomed before their presence was written, after waiting 5 s for it (PostgreSQL slow or away).",
            welcomesBeforePresence)
        counter("herald_gateway_frames_received_total", "Frames read from clients.", framesReceived)
        counter("herald_gateway_frames_sent_total", "Frames written to clients.", framesSent)
        counter("herald_gateway_pushes_sent_total", "Pushes written to connections.", pushesSent)
        counter("herald_gateway_revokes_sent_total", "Recalls' revokes written to connections.", revokesSent)
        counter("herald_gateway_pushes_acknowledged_total", "Pushes acknowledged by their device.", acknowledged)
        counter(
            "herald_gateway_fallbacks_total",
            "Pushes not acknowledged in time (or whose connection closed first), handed to APNs.", fallbacks)
        counter("herald_gateway_goaways_total", "Goaways sent while draining.", goaways)
        counter(
            "herald_gateway_replaced_total", "Connections closed because a newer one of the same device took over.",
            replaced)
        counter(
            "herald_gateway_closed_unwritten_total",
            "Connections closed without their last frame (an error, a drain's goaway): the client did not take it within the ack timeout.",
            closedUnwritten)
        counter(
            "herald_gateway_authentication_failures_total",
            "Hellos that named an unknown key or device, or a wrong alias signature.", access.authenticationFailures)
        counter(
            "herald_gateway_authentication_throttled_total", "Failed hellos answered too_many_failed_authentications.",
            access.authenticationThrottled)
        counter(
            "herald_gateway_key_lookups_total", "Client keys looked up in the database (the key cache's misses).",
            access.keyLookups)
        counter(
            "herald_gateway_presence_batches_total", "Batches of presence changes written to PostgreSQL.",
            presenceBatches)
        counter(
            "herald_gateway_presence_write_failures_total",
            "Presence batches PostgreSQL did not take (tried again with the next).", presenceWriteFailures)
        text.single(
            "herald_gateway_presence_pending", .gauge, help: "Presence changes waiting to be written.",
            value: presencePending)
        text.family(
            "herald_gateway_errors_total", .counter,
            help: "Error frames sent, by code (docs/gateway.md, Errors); slow_reader counts slow-reader disconnects.")
        let errors = self.errors.withLock { $0 }
        for code in GatewayErrorCode.allCases {
            text.sample("herald_gateway_errors_total", ["code": code.rawValue], value: errors[code] ?? 0)
        }
        return text.text
    }
}
