import ArgumentParser
import Foundation
import HeraldAPIContract
import OpenAPIRuntime

/// `herald push`: send a push and follow it (a server key).
struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send a push (the default), dry-run it, list, follow, pause, resume, cancel or recall pushes.",
        subcommands: [
            PushSendCommand.self, PushValidateCommand.self, PushListCommand.self, PushStatusCommand.self,
            PushEventsCommand.self, PushFailuresCommand.self, PushPauseCommand.self, PushResumeCommand.self,
            PushCancelCommand.self, PushRecallCommand.self, PushWinnerCommand.self, PushReportCommand.self,
        ],
        defaultSubcommand: PushSendCommand.self
    )
}

/// The flags that make a `POST /v1/pushes` body: audience, notification, options.
struct PushRequestOptions: ParsableArguments {
    @Flag(help: "Everyone (the app's active devices).") var all = false
    @Option(name: .customLong("id"), help: "A registration id (repeatable).") var registrationIDs: [Int64] = []
    @Option(help: "An alias (repeatable).") var alias: [String] = []
    @Option(help: "Devices with any of these tags (repeatable).") var tag: [String] = []
    @Option(name: .customLong("all-tags"), help: "Devices with all of these tags (repeatable).") var allTags: [String] =
        []
    @Option(name: .customLong("not-tag"), help: "Not devices with this tag (repeatable).") var notTag: [String] = []
    @Option(help: "Only sandbox or only production devices.") var environment: Components.Schemas.Environment?
    @Option(
        help:
            #"Devices whose attributes match this filter (JSON, docs/segments.md), e.g. '{"attribute":"app_version","op":"gte","value":"5.2"}'."#
    )
    var filter: String?
    @Option(help: "A saved segment's id (see `herald segments`).") var segment: String?

    @OptionGroup var notification: NotificationOptions
    @Option(help: "A stored template's id (see `herald templates`), instead of the notification flags.")
    var template: String?

    @Option(name: .customLong("collapse-id"), help: "Later pushes with the same id replace this one on the phone.")
    var collapseID: String?
    @Option(help: "Seconds APNs keeps trying to deliver it.") var ttl: Int?
    @Option(help: "Throttle: notifications a second.") var rate: Int?
    @Option(name: .customLong("finish-within"), help: "Throttle: spread it over this many seconds.") var finishWithin:
        Int?
    @Option(help: "Send at this time (ISO 8601, e.g. 2026-11-22T08:00:00Z).") var at: String?
    @Option(
        name: .customLong("local-time"),
        help: "Send at this time (HH:MM) in each device's own time zone, zone by zone (docs/local-time.md).")
    var localTime: String?
    @Option(
        name: .customLong("local-date"),
        help: "With --local-time: on this local date (YYYY-MM-DD); default, the next HH:MM in each zone.")
    var localDate: String?
    @Option(
        name: .customLong("quiet-hours"),
        help: "Devices in the app's quiet hours: skip (default, counted as skipped) or hold (sent when they end).")
    var quietHours: Components.Schemas.PushOptions.QuietHoursPayload?
    @Option(help: "A push this one replaces on the phones (it takes that push's collapse id).") var replaces: String?
    @Option(
        name: .customLong("class"),
        help:
            "transactional (sent ahead of every campaign; --id/--alias audiences, no throttle) or campaign. Default: transactional for an unthrottled --id/--alias audience."
    )
    var priorityClass: Components.Schemas.PriorityClass?
    @Option(
        help:
            "auto (default: over the app's long connection when it is in the foreground, else APNs), apns (APNs only) or online (only devices connected now; the rest counted skipped, offline)."
    )
    var channel: Components.Schemas.PushOptions.ChannelPayload?
    @Option(
        help:
            "An A/B test's variant, as NAME[:WEIGHT]=BODY (repeatable, 2 to 10): each device gets one, in proportion to the weights; the other notification flags go into every variant."
    )
    var variant: [String] = []
    @Option(name: .customLong("variant-title"), help: "A variant's own title, as NAME=TITLE (repeatable).")
    var variantTitles: [String] = []
    @Option(help: "A share of the audience (0 to 0.5) held out to compare with: counted skipped, never sent.")
    var holdout: Double?
    @Option(
        name: .customLong("winner-sample"),
        help: "Winner mode: the share of the audience the variants go to first (0.01 to 0.9).")
    var winnerSample: Double?
    @Option(
        name: .customLong("winner-wait"),
        help: "Winner mode: seconds after the sample is sent until the best open rate goes to the rest.")
    var winnerWait: Int?
    @Option(help: "A file with a whole POST /v1/pushes body; the audience and notification flags are ignored.")
    var request: String?

    /// `NAME[:WEIGHT]=BODY`.
    static func variantParts(_ entry: String) -> (name: String, weight: Int?, body: String)? {
        guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else { return nil }
        let head = entry[..<equals]
        let body = String(entry[entry.index(after: equals)...])
        guard let colon = head.firstIndex(of: ":") else { return (String(head), nil, body) }
        guard let weight = Int(head[head.index(after: colon)...]) else { return nil }
        return (String(head[..<colon]), weight, body)
    }

    func validate() throws {
        if request != nil { return }
        if !all, registrationIDs.isEmpty, alias.isEmpty, tag.isEmpty, allTags.isEmpty, notTag.isEmpty, filter == nil,
            segment == nil
        {
            throw ValidationError(
                "who gets it? give --all, --id, --alias, --tag/--all-tags/--not-tag, --filter or --segment")
        }
        if let filter, Self.object(filter) == nil {
            throw ValidationError(
                #"--filter must be a JSON object, e.g. '{"attribute":"country","op":"eq","value":"DE"}'"#)
        }
        for entry in variant where Self.variantParts(entry) == nil {
            throw ValidationError("--variant takes NAME[:WEIGHT]=BODY, e.g. --variant short:3='Sale today'")
        }
        for entry in variantTitles where !entry.contains("=") {
            throw ValidationError("--variant-title takes NAME=TITLE")
        }
        if (winnerSample == nil) != (winnerWait == nil) {
            throw ValidationError("winner mode takes both --winner-sample and --winner-wait")
        }
        if winnerSample != nil, variant.isEmpty {
            throw ValidationError("winner mode picks among variants: give two or more --variant")
        }
        if !variant.isEmpty, template != nil { throw ValidationError("give --template or --variant, not both") }
        if notification.isEmpty, template == nil, variant.isEmpty {
            throw ValidationError("what does it say? give --title/--body, --badge, --silent, --data or --template")
        }
        if !notification.isEmpty, template != nil {
            throw ValidationError("give --template or the notification flags, not both")
        }
        if rate != nil, finishWithin != nil { throw ValidationError("give --rate or --finish-within, not both") }
        if let at, Output.date(at) == nil {
            throw ValidationError("--at takes an ISO 8601 time, e.g. 2026-11-22T08:00:00Z")
        }
        if localDate != nil, localTime == nil { throw ValidationError("--local-date goes with --local-time") }
        if localTime != nil, at != nil {
            throw ValidationError(
                "--local-time sets when each device gets it; leave --at out (--local-date sets the day)")
        }
    }

    /// The request body the flags (or the --request file) describe.
    func pushRequest() throws -> Components.Schemas.PushRequest {
        if let request {
            guard let data = FileManager.default.contents(atPath: request) else {
                throw CLIError("--request \(request): cannot read the file", status: .usage)
            }
            do {
                return try Output.decoder().decode(Components.Schemas.PushRequest.self, from: data)
            } catch {
                throw CLIError("--request \(request): not a push request (\(error)); see docs/api.md", status: .usage)
            }
        }
        var tags: Components.Schemas.TagFilter?
        if !tag.isEmpty || !allTags.isEmpty || !notTag.isEmpty {
            tags = .init(
                any: tag.isEmpty ? nil : tag, all: allTags.isEmpty ? nil : allTags, none: notTag.isEmpty ? nil : notTag)
        }
        let audience = Components.Schemas.Audience(
            all: all ? true : nil, registrationIds: registrationIDs.isEmpty ? nil : registrationIDs,
            aliases: alias.isEmpty ? nil : alias, tags: tags, environment: environment,
            filter: filter.flatMap(Self.object).map { Components.Schemas.DeviceFilter(additionalProperties: $0) },
            segmentId: segment)
        var options = Components.Schemas.PushOptions(
            timeToLiveSeconds: ttl, collapseId: collapseID, scheduledAt: at.flatMap(Output.date), replaces: replaces,
            priorityClass: priorityClass, localTime: localTime.map { .init(time: $0, date: localDate) },
            quietHours: quietHours)
        options.channel = channel
        if rate != nil || finishWithin != nil {
            options.throttle = .init(perSecond: rate, finishWithinSeconds: finishWithin)
        }
        options.holdout = holdout
        let hasOptions = options != Components.Schemas.PushOptions()
        if !variant.isEmpty {
            let shared = try notification.notification()
            var titles: [String: String] = [:]
            for entry in variantTitles {
                let equals = entry.firstIndex(of: "=")!
                titles[String(entry[..<equals])] = String(entry[entry.index(after: equals)...])
            }
            let variants = try variant.map { entry in
                guard let parts = Self.variantParts(entry) else { throw ValidationError("--variant \(entry)") }
                var each = shared
                each.alert = .init(
                    title: titles[parts.name] ?? shared.alert?.title, subtitle: shared.alert?.subtitle, body: parts.body
                )
                return Components.Schemas.PushVariant(name: parts.name, weight: parts.weight, notification: each)
            }
            var request = Components.Schemas.PushRequest(audience: audience, options: hasOptions ? options : nil)
            request.variants = variants
            if let winnerSample, let winnerWait {
                request.winner = .init(sample: winnerSample, waitSeconds: winnerWait)
            }
            return request
        }
        return .init(
            audience: audience, notification: template == nil ? try notification.notification() : nil,
            templateId: template, options: hasOptions ? options : nil)
    }

    static func object(_ text: String) -> OpenAPIObjectContainer? {
        try? JSONDecoder().decode(OpenAPIObjectContainer.self, from: Data(text.utf8))
    }
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

    @OptionGroup var push: PushRequestOptions
    @Option(name: .customLong("idempotency-key"), help: "Retrying with the same key returns the first push.")
    var idempotencyKey: String?
    @Flag(help: "Follow the push with a progress bar until it ends (exit 1 if its counters do not add up).")
    var wait = false
    @Flag(help: "Print only the push id (for scripts: id=$(herald push … --quiet)).") var quiet = false
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let connection = try APIConnection.app(try ClientConfiguration.load())
        let answer = try await connection.client.createPush(
            headers: .init(idempotencyKey: idempotencyKey), body: .json(try push.pushRequest())
        ).accepted
        let accepted = try answer.body.json
        let replayed = answer.headers.idempotentReplayed == "true"
        if quiet {
            print(accepted.id)
        } else {
            try output.print(accepted) { accepted in
                "push \(accepted.id) \(accepted.state.rawValue)"
                    + (replayed ? " (the earlier push with this idempotency key)" : "")
            }
        }
        if wait {
            let final = try await PushFollower(
                client: connection.client, pushID: accepted.id, quiet: quiet || output.json
            )
            .follow()
            if !PushProgress.addsUp(final) { throw CLIError("push \(accepted.id) does not add up") }
        }
    }
}

/// The flags that say what a notification shows: `herald push` and `herald templates`.
struct NotificationOptions: ParsableArguments {
    @Option(help: #"The alert's title; may hold placeholders: 'Hi {{first_name | default: "there"}}'."#)
    var title: String?
    @Option(help: "The alert's subtitle.") var subtitle: String?
    @Option(help: "The alert's body.") var body: String?
    @Option(
        name: .customLong("localized-title"),
        help:
            "A language's or locale's own title, as LOCALE=TEXT (repeatable): --localized-title de='Hallo {{first_name}}'."
    )
    var localizedTitles: [String] = []
    @Option(
        name: .customLong("localized-body"), help: "A language's or locale's own body, as LOCALE=TEXT (repeatable).")
    var localizedBodies: [String] = []
    @Option(help: "The app icon's badge.") var badge: Int?
    @Option(help: "A sound file name, or `default`.") var sound: String?
    @Option(help: "The notification category.") var category: String?
    @Option(name: .customLong("thread-id"), help: "Groups notifications.") var threadID: String?
    @Flag(help: "A silent background push (content-available).") var silent = false
    @Option(help: "Custom data: a JSON object.") var data: String?

    var isEmpty: Bool {
        title == nil && subtitle == nil && body == nil && badge == nil && !silent && data == nil
            && localizedTitles.isEmpty && localizedBodies.isEmpty
    }

    func validate() throws {
        if let data, PushRequestOptions.object(data) == nil {
            throw ValidationError(#"--data must be a JSON object, e.g. '{"order":42}'"#)
        }
        for entry in localizedTitles + localizedBodies where Self.split(entry) == nil {
            throw ValidationError("--localized-title and --localized-body take LOCALE=TEXT, e.g. de='Hallo'")
        }
    }

    private static func split(_ entry: String) -> (locale: String, text: String)? {
        guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else { return nil }
        return (String(entry[..<equals]), String(entry[entry.index(after: equals)...]))
    }

    /// The notification the flags describe.
    func notification() throws -> Components.Schemas.Notification {
        var alert: Components.Schemas.Alert?
        if title != nil || subtitle != nil || body != nil {
            alert = .init(title: title, subtitle: subtitle, body: body)
        }
        var localizations: [String: Components.Schemas.LocalizedAlert] = [:]
        for (locale, text) in localizedTitles.compactMap(Self.split) {
            localizations[locale, default: .init()].title = text
        }
        for (locale, text) in localizedBodies.compactMap(Self.split) {
            localizations[locale, default: .init()].body = text
        }
        return Components.Schemas.Notification(
            alert: alert, localizations: localizations.isEmpty ? nil : .init(additionalProperties: localizations),
            badge: badge, sound: sound, category: category, threadId: threadID, silent: silent ? true : nil,
            data: try data.map { text in
                guard let object = PushRequestOptions.object(text) else {
                    throw ValidationError("--data must be a JSON object")
                }
                return object
            })
    }
}

struct PushValidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "A dry run: the audience's size, the payload's bytes against the limit, warnings; nothing is sent.")

    @OptionGroup var push: PushRequestOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        let validation = try await client.validatePush(body: .json(try push.pushRequest())).ok.body.json
        try output.print(validation) { validation in
            var lines = [
                "audience  \(validation.audienceSizeEstimated ? "about " : "")\(Output.count(validation.audienceSize)) devices",
                "payload   \(validation.payloadBytes) of \(validation.payloadLimit) bytes (\(validation.pushType), priority \(validation.priority))",
                "class     \(validation.priorityClass.rawValue)",
            ]
            if let names = validation.placeholders, !names.isEmpty {
                lines.append("personal  \(names.map { "{{\($0)}}" }.joined(separator: " "))")
            }
            if let locales = validation.localizations, !locales.isEmpty {
                lines.append("languages \(locales.joined(separator: " ")) (others get the default texts)")
            }
            for wave in validation.waves ?? [] {
                lines.append(
                    "wave      " + (validation.wavesEstimated == true ? "about " : "") + PushProgress.waveLine(wave))
            }
            lines += validation.warnings.map { "warning   \($0)" }
            return lines.joined(separator: "\n")
        }
    }
}

extension Components.Schemas.PushState: ExpressibleByArgument {}
extension Components.Schemas.PriorityClass: ExpressibleByArgument {}
extension Components.Schemas.PushOptions.ChannelPayload: ExpressibleByArgument {}
extension Components.Schemas.PushOptions.QuietHoursPayload: ExpressibleByArgument {}

struct PushListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The app's pushes, newest first.")

    @Option(help: "Only pushes in this state.") var state: Components.Schemas.PushState?
    @Option(help: "Only the pushes of this schedule's occurrences.") var schedule: String?
    @Option(help: "At most this many.") var limit: Int = 20
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if limit < 1 { throw ValidationError("--limit is at least 1") }
    }

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        var pushes: [Components.Schemas.PushStatus] = []
        var cursor: String?
        repeat {
            let page = try await client.listPushes(
                query: .init(state: state, scheduleId: schedule, cursor: cursor, limit: min(limit - pushes.count, 100))
            )
            .ok.body.json
            pushes += page.pushes
            cursor = page.nextCursor
        } while cursor != nil && pushes.count < limit
        try output.print(pushes) { $0.map(PushProgress.listLine).joined(separator: "\n") }
    }
}

/// `PUSH_ID`, checked to be a push id.
struct PushIDArgument: ParsableArguments {
    @Argument(help: "The push id.") var id: String

    func validate() throws {
        if UUID(uuidString: id) == nil { throw ValidationError("\(id) is not a push id (a UUID)") }
    }
}

struct PushStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "A push's state and counters.")

    @OptionGroup var push: PushIDArgument
    @Flag(help: "Follow it live until it ends (Server-Sent Events; polling where the stream is not available).")
    var watch = false
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        if watch {
            let final = try await PushFollower(client: client, pushID: push.id, quiet: output.json).follow()
            if output.json { print(try Output.json(final)) }
            return
        }
        let status = try await client.getPush(path: .init(pushId: push.id)).ok.body.json
        try output.print(status) { PushProgress.summary($0) }
    }
}

struct PushEventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print a push's live progress events as they come (one JSON status a line) until it ends.")

    @OptionGroup var push: PushIDArgument

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        for try await status in try await PushFollower.events(client: client, pushID: push.id) {
            print(try Output.json(status, pretty: false))
            fflush(nil)
        }
    }
}

struct PushFailuresCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "failures", abstract: "The devices a push did not reach, with why.")

    @OptionGroup var push: PushIDArgument
    @Option(help: "At most this many (every one with --all).") var limit: Int = 100
    @Flag(help: "Every failure, page after page.") var all = false
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        var failures: [Components.Schemas.Failure] = []
        var cursor: Int64?
        repeat {
            let size = all ? 1000 : min(limit - failures.count, 1000)
            let page = try await client.listPushFailures(
                path: .init(pushId: push.id), query: .init(cursor: cursor, limit: size)
            )
            .ok.body.json
            failures += page.failures
            cursor = page.nextCursor
        } while cursor != nil && (all || failures.count < limit)
        try output.print(failures) { failures in
            failures.map { failure in
                "\(failure.registrationId)  \(failure.status.rawValue)  \(failure.reason ?? "-")"
                    + (failure.httpStatus.map { "  HTTP \($0)" } ?? "") + "  attempts \(failure.attempts)"
            }.joined(separator: "\n")
        }
    }
}

struct PushPauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause", abstract: "Hold a scheduled push or a fan-out in progress (resume continues it).")

    @OptionGroup var push: PushIDArgument
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        let status = try await client.pausePush(path: .init(pushId: push.id)).ok.body.json
        try output.print(status) { "push \($0.id) \($0.state.rawValue), paused" }
    }
}

struct PushReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "A push's report: counters, reasons, engagement and each A/B variant's numbers (CSV with --csv).")

    @OptionGroup var push: PushIDArgument
    @Flag(help: "The CSV as the API answers it (scope,metric,value), for a spreadsheet.") var csv = false

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        let body = try await client.getPushReport(path: .init(pushId: push.id)).ok.body.csv
        let text = try await String(collecting: body, upTo: 16 * 1024 * 1024)
        if csv {
            print(text, terminator: "")
            return
        }
        // For people: the same lines in aligned columns.
        let rows = text.split(whereSeparator: \.isNewline).dropFirst().map { line in
            line.split(separator: ",", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        }
        let scopeWidth = rows.map { $0.first?.count ?? 0 }.max() ?? 0
        let metricWidth = rows.map { $0.count > 1 ? $0[1].count : 0 }.max() ?? 0
        for row in rows where row.count == 3 {
            print(
                row[0].padding(toLength: scopeWidth, withPad: " ", startingAt: 0) + "  "
                    + row[1].padding(toLength: metricWidth, withPad: " ", startingAt: 0) + "  " + row[2])
        }
    }
}

struct PushWinnerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "winner",
        abstract: "Pick an A/B test's winner now (winner mode): the rest of the audience gets it at once.")

    @OptionGroup var push: PushIDArgument
    @Argument(help: "The variant's name.") var variant: String
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        let status = try await client.pickWinner(path: .init(pushId: push.id), body: .json(.init(variant: variant)))
            .ok.body.json
        try output.print(status) { "push \($0.id) \($0.state.rawValue), winner \($0.winner ?? variant)" }
    }
}

struct PushResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "resume", abstract: "Continue a paused push.")

    @OptionGroup var push: PushIDArgument
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        let status = try await client.resumePush(path: .init(pushId: push.id)).ok.body.json
        try output.print(status) { "push \($0.id) \($0.state.rawValue), resumed" }
    }
}

struct PushCancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Cancel a push: what is not yet sent never is.")

    @OptionGroup var push: PushIDArgument
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        let status = try await client.cancelPush(path: .init(pushId: push.id)).ok.body.json
        try output.print(status) { "push \($0.id) \($0.state.rawValue)" }
    }
}

struct PushRecallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recall",
        abstract: "Cancel a push and remove it from the phones that got it (a background revoke push).")

    @OptionGroup var push: PushIDArgument
    @Flag(help: "Follow the recall push until it ends.") var wait = false
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        let recall = try await client.recallPush(path: .init(pushId: push.id)).accepted.body.json
        try output.print(recall) { "push \(push.id) recalled: revoke push \($0.id) \($0.state.rawValue)" }
        if wait { _ = try await PushFollower(client: client, pushID: recall.id, quiet: output.json).follow() }
    }
}
