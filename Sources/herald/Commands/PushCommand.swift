import ArgumentParser
import Foundation

/// `herald push`: send a push and follow it (a server key).
struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send a push (the default), follow it, cancel or recall it.",
        subcommands: [PushSendCommand.self, PushStatusCommand.self, PushCancelCommand.self, PushRecallCommand.self],
        defaultSubcommand: PushSendCommand.self
    )
}

struct PushSendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a push to an audience.",
        discussion: """
            herald push --all --title "Storm warning" --body "Gusts up to 120 km/h tonight" --wait
            herald push --tag news --not-tag muted --body "Morning briefing" --rate 2000
            herald push --alias user-42 --body "Your order has shipped" --data '{"order":42}'
            herald push --request push.json      # a whole POST /v1/pushes body (docs/api.md)
            """)

    @Flag(help: "Everyone (the app's active devices).") var all = false
    @Option(name: .customLong("id"), help: "A registration id (repeatable).") var registrationIDs: [Int] = []
    @Option(help: "An alias (repeatable).") var alias: [String] = []
    @Option(help: "Devices with any of these tags (repeatable).") var tag: [String] = []
    @Option(name: .customLong("all-tags"), help: "Devices with all of these tags (repeatable).") var allTags: [String] =
        []
    @Option(name: .customLong("not-tag"), help: "Not devices with this tag (repeatable).") var notTag: [String] = []
    @Option(help: "Only sandbox or only production devices.") var environment: String?

    @Option(help: "The alert's title.") var title: String?
    @Option(help: "The alert's subtitle.") var subtitle: String?
    @Option(help: "The alert's body.") var body: String?
    @Option(help: "The app icon's badge.") var badge: Int?
    @Option(help: "A sound file name, or `default`.") var sound: String?
    @Option(help: "The notification category.") var category: String?
    @Option(name: .customLong("thread-id"), help: "Groups notifications.") var threadID: String?
    @Flag(help: "A silent background push (content-available).") var silent = false
    @Option(help: "Custom data: a JSON object.") var data: String?

    @Option(name: .customLong("collapse-id"), help: "Later pushes with the same id replace this one on the phone.")
    var collapseID: String?
    @Option(help: "Seconds APNs keeps trying to deliver it.") var ttl: Int?
    @Option(help: "Throttle: notifications a second.") var rate: Int?
    @Option(name: .customLong("finish-within"), help: "Throttle: spread it over this many seconds.") var finishWithin:
        Int?
    @Option(help: "Send at this time (ISO 8601, e.g. 2026-11-22T08:00:00Z).") var at: String?
    @Option(name: .customLong("idempotency-key"), help: "Retrying with the same key returns the first push.")
    var idempotencyKey: String?
    @Option(help: "A file with a whole POST /v1/pushes body; the audience and notification flags are ignored.")
    var request: String?

    @Flag(help: "Follow the push with a progress bar until it ends.") var wait = false
    @Flag(help: "Print only the push id (for scripts: id=$(herald push … --quiet)).") var quiet = false

    func run() async throws {
        let client = try APIClient.app(try ClientConfiguration.load())
        let body = try requestBody()
        var headers: [(String, String)] = []
        if let idempotencyKey { headers.append(("Idempotency-Key", idempotencyKey)) }
        let answer = try await client.post("/v1/pushes", json: body, headers: headers)
        let id = answer.body["id"] as? String ?? "?"
        let replayed = answer.headers.first(name: "Idempotent-Replayed") == "true"
        if quiet {
            print(id)
            return
        }
        print(
            "push \(id) \(answer.body["state"] as? String ?? "?")\(replayed ? " (the earlier push with this idempotency key)" : "")"
        )
        if wait {
            let final = try await PushProgress(client: client, pushID: id).follow()
            if !PushProgress.addsUp(final) { throw ExitCode.failure }
        }
    }

    func requestBody() throws -> [String: Any] {
        if let request {
            guard let data = FileManager.default.contents(atPath: request),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else {
                throw CLIError("--request \(request): not a readable JSON object")
            }
            return object
        }
        var audience: [String: Any] = [:]
        if all { audience["all"] = true }
        if !registrationIDs.isEmpty { audience["registration_ids"] = registrationIDs }
        if !alias.isEmpty { audience["aliases"] = alias }
        var tags: [String: Any] = [:]
        if !tag.isEmpty { tags["any"] = tag }
        if !allTags.isEmpty { tags["all"] = allTags }
        if !notTag.isEmpty { tags["none"] = notTag }
        if !tags.isEmpty { audience["tags"] = tags }
        guard !audience.isEmpty else {
            throw ValidationError("who gets it? give --all, --id, --alias or --tag/--all-tags/--not-tag")
        }
        if let environment { audience["environment"] = environment }

        var notification: [String: Any] = [:]
        var alert: [String: Any] = [:]
        if let title { alert["title"] = title }
        if let subtitle { alert["subtitle"] = subtitle }
        if let body { alert["body"] = body }
        if !alert.isEmpty { notification["alert"] = alert }
        if let badge { notification["badge"] = badge }
        if let sound { notification["sound"] = sound }
        if let category { notification["category"] = category }
        if let threadID { notification["thread_id"] = threadID }
        if silent { notification["silent"] = true }
        if let data {
            guard let object = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] else {
                throw ValidationError("--data must be a JSON object, e.g. '{\"order\":42}'")
            }
            notification["data"] = object
        }
        guard !notification.isEmpty else {
            throw ValidationError("what does it say? give --title/--body, --badge, --silent or --data")
        }

        var options: [String: Any] = [:]
        if let collapseID { options["collapse_id"] = collapseID }
        if let ttl { options["time_to_live_seconds"] = ttl }
        if let rate { options["throttle"] = ["per_second": rate] }
        if let finishWithin { options["throttle"] = ["finish_within_seconds": finishWithin] }
        if let at { options["scheduled_at"] = at }
        var result: [String: Any] = ["audience": audience, "notification": notification]
        if !options.isEmpty { result["options"] = options }
        return result
    }
}

struct PushStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "A push's state and counters.")

    @Argument(help: "The push id.") var id: String
    @Flag(help: "Follow it with a progress bar until it ends.") var watch = false
    @Flag(help: "Print the API's JSON.") var json = false

    func run() async throws {
        let client = try APIClient.app(try ClientConfiguration.load())
        if watch {
            _ = try await PushProgress(client: client, pushID: id).follow()
            return
        }
        let status = try await client.get("/v1/pushes/\(id)").body
        if json {
            let data = try JSONSerialization.data(withJSONObject: status, options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(PushProgress.summary(status))
        }
    }
}

struct PushCancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Cancel a push: what is not yet sent never is.")

    @Argument(help: "The push id.") var id: String

    func run() async throws {
        let client = try APIClient.app(try ClientConfiguration.load())
        let status = try await client.delete("/v1/pushes/\(id)").body
        print("push \(id) \(status["state"] as? String ?? "?")")
    }
}

struct PushRecallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recall",
        abstract: "Cancel a push and remove it from the phones that got it (a background revoke push).")

    @Argument(help: "The push id.") var id: String
    @Flag(help: "Follow the recall push until it ends.") var wait = false

    func run() async throws {
        let client = try APIClient.app(try ClientConfiguration.load())
        let recall = try await client.post("/v1/pushes/\(id)/recall").body
        let recallID = recall["id"] as? String ?? "?"
        print("push \(id) recalled: revoke push \(recallID) \(recall["state"] as? String ?? "?")")
        if wait { _ = try await PushProgress(client: client, pushID: recallID).follow() }
    }
}

/// Follows a push by polling its status: a live bar on a terminal, plain lines otherwise.
struct PushProgress {
    let client: APIClient
    let pushID: String
    var interval: Duration = .milliseconds(250)

    static let terminal = isatty(STDOUT_FILENO) == 1

    /// Polls until the push is completed (or canceled and settled); returns its last status.
    func follow() async throws -> [String: Any] {
        var samples: [(time: ContinuousClock.Instant, done: Int)] = []
        var lastPlain = ContinuousClock.now - .seconds(10)
        var canceledSince: ContinuousClock.Instant?
        while true {
            let status = try await client.get("/v1/pushes/\(pushID)").body
            let now = ContinuousClock.now
            let counters = Self.counters(status)
            samples.append((now, counters.done))
            samples.removeAll { now - $0.time > .seconds(3) }
            let rate =
                samples.count > 1
                ? Double(counters.done - samples[0].done) / max((now - samples[0].time).seconds, 0.001) : 0
            let state = status["state"] as? String ?? "?"
            let line = Self.line(status, rate: rate)
            var finished = state == "completed"
            if state == "canceled" {
                canceledSince = canceledSince ?? now
                finished = counters.done >= counters.targeted || now - canceledSince! > .seconds(10)
            }
            if Self.terminal {
                print("\r\u{1B}[2K" + line, terminator: finished ? "\n" : "")
                fflush(nil)
            } else if finished || now - lastPlain >= .seconds(2) {
                print(line)
                fflush(nil)
                lastPlain = now
            }
            if finished {
                print(Self.summary(status))
                return status
            }
            try await Task.sleep(for: interval)
        }
    }

    struct Counters {
        var targeted = 0, accepted = 0, rejected = 0, expired = 0, canceled = 0, invalidated = 0
        var byReason: [String: Int] = [:]
        var done: Int { accepted + rejected + expired + canceled }
    }

    static func counters(_ status: [String: Any]) -> Counters {
        let raw = status["counters"] as? [String: Any] ?? [:]
        func int(_ key: String) -> Int { raw[key] as? Int ?? 0 }
        return Counters(
            targeted: int("targeted"), accepted: int("accepted"), rejected: int("rejected"),
            expired: int("expired"), canceled: int("canceled"), invalidated: int("tokens_invalidated"),
            byReason: raw["rejected_by_reason"] as? [String: Int] ?? [:])
    }

    /// One line: state, a bar, done of total, accepted, failed by reason, rate, ETA.
    static func line(_ status: [String: Any], rate: Double) -> String {
        let counters = counters(status)
        let state = status["state"] as? String ?? "?"
        let total = max(status["audience_size"] as? Int ?? counters.targeted, counters.targeted)
        let fraction = total > 0 ? min(Double(counters.done) / Double(total), 1) : (state == "completed" ? 1 : 0)
        let width = 24
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        var text =
            "\(state.padding(toLength: 11, withPad: " ", startingAt: 0)) ▕\(bar)▏ \(String(format: "%3.0f", fraction * 100))%  "
            + "\(format(counters.done))/\(format(total))  accepted \(format(counters.accepted))"
        let failed = counters.rejected + counters.expired
        if failed > 0 { text += "  failed \(format(failed))" + reasons(counters) }
        if counters.canceled > 0 { text += "  canceled \(format(counters.canceled))" }
        if rate > 0 { text += "  \(format(Int(rate)))/s" }
        if state != "completed", state != "canceled" {
            if rate > 0, total > counters.done {
                text += "  ETA \(Int((Double(total - counters.done) / rate).rounded(.up)))s"
            } else if let eta = status["eta"] as? String {
                text += "  ETA \(eta)"
            }
        }
        return text
    }

    static func reasons(_ counters: Counters) -> String {
        var parts = counters.byReason.sorted { $0.value > $1.value }.map { "\($0.key) \(format($0.value))" }
        if counters.expired > 0 { parts.append("expired \(format(counters.expired))") }
        return parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")"
    }

    /// The summary an operator checks: targeted = accepted + rejected (by reason) + expired + canceled.
    static func summary(_ status: [String: Any]) -> String {
        let counters = counters(status)
        var text =
            "push \(status["id"] as? String ?? "?"): \(status["state"] as? String ?? "?")\n"
            + "  targeted \(format(counters.targeted)) = accepted \(format(counters.accepted)) + rejected \(format(counters.rejected))"
        if !counters.byReason.isEmpty {
            text +=
                " ("
                + counters.byReason.sorted { $0.key < $1.key }.map { "\($0.key) \(format($0.value))" }.joined(
                    separator: ", ") + ")"
        }
        text += " + expired \(format(counters.expired)) + canceled \(format(counters.canceled))"
        let state = status["state"] as? String
        if state == "completed" || state == "canceled" {
            text += addsUp(status) ? "  ✔ adds up" : "  ✘ does NOT add up (\(format(counters.done)) accounted)"
        }
        if counters.invalidated > 0 { text += "\n  tokens invalidated \(format(counters.invalidated))" }
        for key in ["created_at", "fanout_started_at", "fanout_finished_at", "completed_at", "canceled_at"] {
            if let value = status[key] as? String {
                text += "\n  \(key.replacingOccurrences(of: "_", with: " ")) \(value)"
            }
        }
        return text
    }

    static func addsUp(_ status: [String: Any]) -> Bool {
        let counters = counters(status)
        return counters.targeted == counters.done
    }

    static func format(_ value: Int) -> String {
        let digits = String(value)
        var result = ""
        for (index, character) in digits.reversed().enumerated() {
            if index > 0, index % 3 == 0, character != "-" { result.append(",") }
            result.append(character)
        }
        return String(result.reversed())
    }
}

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "The app in numbers: devices, pushes, delivery.")

    @Option(help: "Only pushes created since this time (ISO 8601).") var since: String?

    func run() async throws {
        let client = try APIClient.app(try ClientConfiguration.load())
        let stats = try await client.get("/v1/stats" + (since.map { "?since=\($0)" } ?? "")).body
        let devices = stats["devices"] as? [String: Any] ?? [:]
        let byEnvironment = (devices["by_environment"] as? [String: Int] ?? [:]).sorted { $0.key < $1.key }
            .map { "\($0.key) \(PushProgress.format($0.value))" }.joined(separator: ", ")
        print(
            "devices   active \(PushProgress.format(devices["active"] as? Int ?? 0)), invalid "
                + "\(PushProgress.format(devices["invalid"] as? Int ?? 0))\(byEnvironment.isEmpty ? "" : " (\(byEnvironment))")"
        )
        let pushes = (stats["pushes"] as? [String: Int] ?? [:]).sorted { $0.key < $1.key }
            .map { "\($0.key) \(PushProgress.format($0.value))" }.joined(separator: ", ")
        print("pushes    \(pushes.isEmpty ? "none" : pushes)")
        let delivery = PushProgress.counters(["counters": stats["delivery"] ?? [:]])
        print(
            "delivery  targeted \(PushProgress.format(delivery.targeted)), accepted \(PushProgress.format(delivery.accepted)), "
                + "rejected \(PushProgress.format(delivery.rejected))\(PushProgress.reasons(delivery)), "
                + "expired \(PushProgress.format(delivery.expired)), canceled \(PushProgress.format(delivery.canceled))"
        )
    }
}
