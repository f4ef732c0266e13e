import ArgumentParser
import Foundation
import HeraldAPIContract

/// `herald schedules`: recurring pushes — a push and an RRULE in a named time zone, each
/// occurrence a push of its own (docs/schedules.md; the app's server key).
struct SchedulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedules",
        abstract: "Recurring pushes: a push and a rule (RRULE) in a time zone; each occurrence becomes a push.",
        subcommands: [
            SchedulesCreateCommand.self, SchedulesListCommand.self, SchedulesGetCommand.self,
            SchedulesUpdateCommand.self, SchedulesPauseCommand.self, SchedulesResumeCommand.self,
            SchedulesDeleteCommand.self,
        ],
        defaultSubcommand: SchedulesListCommand.self)
}

extension Components.Schemas.Schedule {
    var line: String {
        var line = "\(id)  \(name)  \(state.rawValue)  \(recurrence.rrule) in \(recurrence.timeZone)"
        if let next = nextOccurrences.first { line += "  next \(Output.time(next))" }
        line += "  \(pushesCreated) sent"
        if occurrencesSkipped > 0 { line += ", \(occurrencesSkipped) skipped" }
        return line
    }

    var details: String {
        var lines = [
            "schedule \(line)", "  starts \(recurrence.startsAt) (local), late window \(lateWindowMinutes) min",
        ]
        lines += nextOccurrences.map { "  next \(Output.time($0))" }
        if let skip = lastSkip { lines.append("  last skipped \(Output.time(skip.occurrenceAt)): \(skip.reason)") }
        lines.append("  its pushes: herald push list --schedule \(id)")
        return lines.joined(separator: "\n")
    }
}

/// The rule flags of `herald schedules create|update`.
struct ScheduleRuleOptions: ParsableArguments {
    @Option(help: "The rule, e.g. 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=0' (docs/schedules.md).")
    var rrule: String?
    @Option(name: .customLong("time-zone"), help: "The IANA time zone it is read in, e.g. Europe/Berlin.")
    var timeZone: String?
    @Option(name: .customLong("starts-at"), help: "The first occurrence, local: YYYY-MM-DDTHH:MM.") var startsAt:
        String?
    @Option(
        name: .customLong("late-window"), help: "Minutes an occurrence may be sent late (after an outage); default 60.")
    var lateWindow: Int?

    /// The recurrence, when the rule flags were given (all three are needed).
    func recurrence() throws -> Components.Schemas.ScheduleRecurrence? {
        guard rrule != nil || timeZone != nil || startsAt != nil else { return nil }
        guard let rrule, let timeZone, let startsAt else {
            throw ValidationError("give --rrule, --time-zone and --starts-at together")
        }
        return .init(rrule: rrule, timeZone: timeZone, startsAt: startsAt)
    }
}

struct SchedulesCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Save a recurring push.",
        discussion: """
            herald schedules create --name briefing --rrule 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=0' \\
              --time-zone Europe/Berlin --starts-at 2026-12-01T08:00 --tag news --title "Good morning" --body "Your briefing"
            """)

    @Option(help: "Its name, unique in the app.") var name: String
    @OptionGroup var rule: ScheduleRuleOptions
    @OptionGroup var push: PushRequestOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        guard let recurrence = try rule.recurrence() else {
            throw ValidationError("when? give --rrule, --time-zone and --starts-at")
        }
        let schedule = try await APIConnection.app(try ClientConfiguration.load()).client.createSchedule(
            body: .json(
                .init(
                    name: name, recurrence: recurrence, push: try push.pushRequest(), lateWindowMinutes: rule.lateWindow
                ))
        ).created.body.json
        try output.print(schedule) { $0.details }
    }
}

struct SchedulesListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The app's schedules, by name.")

    @OptionGroup var output: OutputOptions

    func run() async throws {
        let list = try await APIConnection.app(try ClientConfiguration.load()).client.listSchedules().ok.body.json
        try output.print(list) { $0.schedules.map(\.line).joined(separator: "\n") }
    }
}

struct SchedulesGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "One schedule: its next occurrences and what came of the past ones.")

    @Argument(help: "The schedule's id.") var id: String
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let schedule = try await APIConnection.app(try ClientConfiguration.load()).client.getSchedule(
            path: .init(scheduleId: id)
        ).ok.body.json
        try output.print(schedule) { $0.details }
    }
}

struct SchedulesUpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update", abstract: "Rename a schedule or change its rule or late window (pushes sent stay).")

    @Argument(help: "The schedule's id.") var id: String
    @Option(help: "A new name.") var name: String?
    @OptionGroup var rule: ScheduleRuleOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let schedule = try await APIConnection.app(try ClientConfiguration.load()).client.updateSchedule(
            path: .init(scheduleId: id),
            body: .json(.init(name: name, recurrence: try rule.recurrence(), lateWindowMinutes: rule.lateWindow))
        ).ok.body.json
        try output.print(schedule) { $0.details }
    }
}

struct SchedulesPauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pause", abstract: "Stop firing a schedule.")

    @Argument(help: "The schedule's id.") var id: String

    func run() async throws {
        let schedule = try await APIConnection.app(try ClientConfiguration.load()).client.pauseSchedule(
            path: .init(scheduleId: id)
        ).ok.body.json
        print("schedule \(schedule.line)")
    }
}

struct SchedulesResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Fire a schedule again from its next occurrence after now.")

    @Argument(help: "The schedule's id.") var id: String

    func run() async throws {
        let schedule = try await APIConnection.app(try ClientConfiguration.load()).client.resumeSchedule(
            path: .init(scheduleId: id)
        ).ok.body.json
        print("schedule \(schedule.line)")
    }
}

struct SchedulesDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a schedule (the pushes it sent stay).")

    @Argument(help: "The schedule's id.") var id: String

    func run() async throws {
        _ = try await APIConnection.app(try ClientConfiguration.load()).client.deleteSchedule(
            path: .init(scheduleId: id)
        ).noContent
        print("schedule \(id) deleted")
    }
}
