import Foundation
import HeraldAPIContract
import OpenAPIRuntime

/// Follows a push until it is over: a live bar on a terminal, a plain line every two seconds
/// otherwise, then the summary. Reads the push's Server-Sent Events stream; where that is not
/// available (a proxy that buffers, an older herald-api) or breaks off, it polls the status.
struct PushFollower {
    let client: Client
    let pushID: String
    /// Print nothing while following (`--json`, `--quiet`): only the final status is returned.
    var quiet = false
    var pollInterval: Duration = .milliseconds(250)

    static let terminal = isatty(STDOUT_FILENO) == 1

    /// Follows until the push is completed, or canceled and settled (at most 10 s after the
    /// cancellation); returns its last status.
    func follow() async throws -> Components.Schemas.PushStatus {
        var display = Display(quiet: quiet)
        var last: Components.Schemas.PushStatus?
        do {
            for try await status in try await Self.events(client: client, pushID: pushID) {
                last = status
                display.show(status)
            }
        } catch let error where Self.pollInstead(error) {
            // The stream broke off, is not served, or this herald-api serves enough streams:
            // poll instead (any other API refusal is final).
        }
        if let last, PushProgress.isSettled(last) { return display.finish(last) }
        return try await poll(display: &display)
    }

    private func poll(display: inout Display) async throws -> Components.Schemas.PushStatus {
        var canceledSince: ContinuousClock.Instant?
        while true {
            let status = try await client.getPush(path: .init(pushId: pushID)).ok.body.json
            display.show(status)
            if status.state == .canceled { canceledSince = canceledSince ?? .now }
            if PushProgress.isSettled(status) || canceledSince.map({ ContinuousClock.now - $0 > .seconds(10) }) == true
            {
                return display.finish(status)
            }
            try await Task.sleep(for: pollInterval)
        }
    }

    static func pollInstead(_ error: any Error) -> Bool {
        guard let failure = error.unwrappedFromClient as? APIFailure else { return true }
        return failure.code == "too_many_streams"
    }

    /// The push's statuses from its event stream (`progress` events), until the stream ends.
    static func events(client: Client, pushID: String) async throws
        -> some AsyncSequence<Components.Schemas.PushStatus, any Error>
    {
        let body = try await client.streamPushEvents(path: .init(pushId: pushID)).ok.body.textEventStream
        return body.asDecodedServerSentEventsWithJSONData(
            of: Components.Schemas.PushStatus.self, decoder: Output.decoder()
        )
        .compactMap { event in event.event == nil || event.event == "progress" ? event.data : nil }
    }

    /// What the person watching sees.
    struct Display {
        let quiet: Bool
        var samples: [(time: ContinuousClock.Instant, done: Int64)] = []
        var lastPlain = ContinuousClock.now - .seconds(10)

        mutating func show(_ status: Components.Schemas.PushStatus) {
            let now = ContinuousClock.now
            samples.append((now, PushProgress.Counters(status.counters).done))
            samples.removeAll { now - $0.time > .seconds(3) }
            guard !quiet else { return }
            let line = PushProgress.line(status, rate: PushProgress.rate(samples))
            if PushFollower.terminal {
                print("\r\u{1B}[2K" + line, terminator: "")
                fflush(nil)
            } else if now - lastPlain >= .seconds(2) {
                print(line)
                fflush(nil)
                lastPlain = now
            }
        }

        func finish(_ status: Components.Schemas.PushStatus) -> Components.Schemas.PushStatus {
            guard !quiet else { return status }
            let line = PushProgress.line(status, rate: PushProgress.rate(samples))
            print(PushFollower.terminal ? "\r\u{1B}[2K" + line : line)
            print(PushProgress.summary(status))
            fflush(nil)
            return status
        }
    }
}
