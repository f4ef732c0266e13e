import ArgumentParser
import Foundation
import HeraldAPIContract
import OpenAPIRuntime
import Testing

@testable import HeraldCLI

@Suite("herald CLI: progress, arguments, configuration, exit status (no server)")
struct CLITests {
    static func status(
        state: Components.Schemas.PushState, targeted: Int64, accepted: Int64, rejected: [String: Int64] = [:],
        expired: Int64 = 0, canceled: Int64 = 0, skipped: [String: Int64] = [:], online: Int64 = 0,
        audience: Int64? = nil
    ) -> Components.Schemas.PushStatus {
        let rejectedCount = rejected.values.reduce(0, +)
        return .init(
            id: "45e8d537-0000-4000-8000-000000000001", state: state, pushType: "alert", priority: 10,
            priorityClass: .campaign,
            collapseId: "45e8d537-0000-4000-8000-000000000001", paused: false, audienceSize: audience,
            counters: .init(
                targeted: targeted, accepted: accepted, deliveredOnline: online, rejected: rejectedCount,
                expired: expired, canceled: canceled,
                skipped: skipped.values.reduce(0, +), tokensInvalidated: rejectedCount,
                rejectedByReason: .init(additionalProperties: rejected),
                skippedByReason: .init(additionalProperties: skipped)),
            createdAt: Date(timeIntervalSince1970: 1_795_000_000))
    }

    // MARK: Progress

    @Test("a progress line: bar, done of the audience, failures by reason (most first), rate and ETA")
    func progressLine() {
        let status = Self.status(
            state: .sending, targeted: 40_000, accepted: 30_000,
            rejected: ["Unregistered": 1_960, "BadDeviceToken": 40],
            audience: 100_000)
        let line = PushProgress.line(status, rate: 16_000)
        #expect(line.hasPrefix("sending     ▕"))
        #expect(
            line.contains(
                "▏  32%  32,000/100,000  accepted 30,000  failed 2,000 (Unregistered 1,960, BadDeviceToken 40)"))
        #expect(line.contains("16,000/s  ETA 5s"), "68,000 left at 16,000/s")
        let bar = line.drop { $0 != "▕" }.dropFirst().prefix { $0 != "▏" }
        #expect(bar.count == 24 && bar.filter { $0 == "█" }.count == 7)
    }

    @Test("the summary says whether the counters add up")
    func summary() {
        let good = Self.status(state: .completed, targeted: 100, accepted: 97, rejected: ["Unregistered": 3])
        #expect(
            PushProgress.summary(good).contains(
                "targeted 100 = accepted 97 + rejected 3 (Unregistered 3) + expired 0 + canceled 0  ✔ adds up"))
        #expect(PushProgress.addsUp(good))
        let short = Self.status(state: .completed, targeted: 100, accepted: 90)
        #expect(PushProgress.summary(short).contains("✘ does NOT add up (90 accounted)"))
        #expect(!PushProgress.addsUp(short))
        // Devices the app's delivery policy skipped are a terminal outcome of their own.
        let skipped = Self.status(
            state: .completed, targeted: 100, accepted: 60, skipped: ["capped": 30, "quiet_hours": 10])
        #expect(
            PushProgress.summary(skipped).contains(
                "+ canceled 0 + skipped 40 (capped 30, quiet_hours 10)  ✔ adds up"), "\(PushProgress.summary(skipped))")
        // Devices reached over their long connection (herald-gateway) count as done, beside APNs'.
        let online = Self.status(state: .completed, targeted: 100, accepted: 70, online: 30)
        #expect(
            PushProgress.summary(online).contains("targeted 100 = accepted 70 + online 30 + rejected 0"),
            "\(PushProgress.summary(online))")
        #expect(PushProgress.addsUp(online))
        #expect(!PushProgress.addsUp(Self.status(state: .completed, targeted: 100, accepted: 70)))
        // What the devices reported back, against the devices reached by either road.
        var engaged = online
        engaged.engagement = .init(
            reached: 100, received: 90, opened: 21, dismissed: 5,
            actions: .init(additionalProperties: ["reply": 3, "archive": 1]), receivedRate: 0.9, openRate: 0.21)
        #expect(
            PushProgress.summary(engaged).contains(
                "engagement  of 100 reached: received 90 (90.0%), opened 21 (21.0%), dismissed 5, actions (archive 1, reply 3)"
            ),
            "\(PushProgress.summary(engaged))")
        #expect(!PushProgress.summary(online).contains("engagement"))
        // What it said, as accepted.
        engaged.notification = try? OpenAPIObjectContainer(
            unvalidatedValue: ["alert": ["title": "Sale", "body": "Today only"], "badge": 1])
        #expect(
            PushProgress.summary(engaged).contains(
                #"notification {"alert":{"body":"Today only","title":"Sale"},"badge":1}"#),
            "\(PushProgress.summary(engaged))")
        #expect(PushProgress.isSettled(Self.status(state: .canceled, targeted: 10, accepted: 4, canceled: 6)))
        #expect(!PushProgress.isSettled(Self.status(state: .canceled, targeted: 10, accepted: 4)))
        #expect(
            Output.count(1_234_567) == "1,234,567" && Output.count(-1_000) == "-1,000" && Output.count(999) == "999")
    }

    // MARK: Arguments

    @Test("push flags become the contract's request; what is missing or malformed is a usage error")
    func pushArguments() throws {
        let command = try PushSendCommand.parse([
            "--tag", "news", "--not-tag", "muted", "--title", "Storm", "--body", "Gusts", "--rate", "2000",
            "--data", #"{"order":42}"#, "--at", "2026-12-01T08:00:00Z",
        ])
        let request = try command.push.pushRequest()
        #expect(request.audience.tags == .init(any: ["news"], none: ["muted"]) && request.audience.all == nil)
        #expect(request.notification?.alert == .init(title: "Storm", body: "Gusts"))
        #expect(request.options?.throttle == .init(perSecond: 2000))
        #expect(request.options?.scheduledAt == Date(timeIntervalSince1970: 1_796_112_000))
        let data = try JSONEncoder().encode(request.notification?.data)
        #expect(String(decoding: data, as: UTF8.self) == #"{"order":42}"#)

        let wrong: [([String], String)] = [
            (["--body", "x"], "who gets it?"),
            (["--all"], "what does it say?"),
            (["--all", "--body", "x", "--rate", "5", "--finish-within", "60"], "not both"),
            (["--all", "--body", "x", "--data", "[1]"], "--data must be a JSON object"),
            (["--all", "--body", "x", "--at", "tomorrow"], "ISO 8601"),
            (["--all", "--body", "x", "--environment", "staging"], "staging"),
            (["--all", "--body", "x", "--wiggle"], "wiggle"),
        ]
        for (arguments, says) in wrong {
            do {
                _ = try Herald.parseAsRoot(["push", "send"] + arguments)
                Issue.record("\(arguments) was accepted")
            } catch {
                let (status, message) = HeraldCommandLine.outcome(of: error)
                #expect(status == .usage, "\(arguments)")
                #expect(message.contains(says), "\(arguments): \(message)")
            }
        }
        #expect(throws: (any Error).self) { try Herald.parseAsRoot(["push", "status", "not-a-uuid"]) }
        #expect(throws: (any Error).self) { try Herald.parseAsRoot(["app", "delete", "--app", "x"]) }
    }

    // MARK: Configuration

    @Test("configuration: the environment wins over the file; the file is written 0600 and merged")
    func configuration() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("nested/cli.json")
        try ClientConfiguration.save(["api_url": "http://10.0.0.1:8080", "api_key": "hs_file"], to: file)
        try ClientConfiguration.save(["app_id": "app-1"], to: file)
        let permissions = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(permissions == 0o600, "it holds keys")

        let fromFile = try ClientConfiguration.load(environment: ["HERALD_CLI_CONFIG": file.path])
        #expect(fromFile.apiURL == "http://10.0.0.1:8080" && fromFile.apiKey == "hs_file" && fromFile.appID == "app-1")
        #expect(fromFile.adminToken == nil)
        let overridden = try ClientConfiguration.load(environment: [
            "HERALD_CLI_CONFIG": file.path, "HERALD_API_KEY": "hs_env", "HERALD_API_URL": "http://127.0.0.1:9",
        ])
        #expect(
            overridden.apiKey == "hs_env" && overridden.apiURL == "http://127.0.0.1:9" && overridden.appID == "app-1")

        let neither = try ClientConfiguration.load(environment: ["HOME": folder.path])
        #expect(neither.apiURL == "http://127.0.0.1:8080" && neither.apiKey == nil)
        #expect(throws: CLIError.self) { try neither.requireKey() }
        #expect(throws: CLIError.self) { try neither.requireAdminToken() }

        try Data("[1, 2]".utf8).write(to: file)
        #expect(throws: CLIError.self) { try ClientConfiguration.load(environment: ["HERALD_CLI_CONFIG": file.path]) }
        #expect(throws: CLIError.self) { try APIConnection(baseURL: "ftp://example", bearer: "x") }
    }

    // MARK: Exit status

    @Test("exit status: 0 done, 1 refused, 2 usage, 3 unavailable, 4 key refused")
    func exitStatus() {
        func failure(_ status: Int) -> APIFailure {
            APIFailure(
                operation: "POST /v1/pushes", status: status,
                body: Array(
                    #"{"error":{"code":"invalid","message":"a collapse id is 1 to 64 bytes","field":"options.collapse_id"}}"#
                        .utf8))
        }
        #expect(HeraldCommandLine.outcome(of: failure(422)).0 == .failure)
        #expect(HeraldCommandLine.outcome(of: failure(401)).0 == .notAllowed)
        #expect(HeraldCommandLine.outcome(of: failure(403)).0 == .notAllowed)
        #expect(HeraldCommandLine.outcome(of: failure(503)).0 == .unavailable)
        let message = HeraldCommandLine.outcome(of: failure(422)).1
        #expect(
            message
                == "herald: POST /v1/pushes: 422 invalid: a collapse id is 1 to 64 bytes (field options.collapse_id)")
        // The generated client wraps what a middleware throws; the status is the CLI's all the same.
        let wrapped = ClientError(
            operationID: "createPush", operationInput: (), causeDescription: "middleware", underlyingError: failure(503)
        )
        #expect(HeraldCommandLine.outcome(of: wrapped).0 == .unavailable)
        #expect(
            HeraldCommandLine.outcome(of: CLIError("cannot reach herald-api", status: .unavailable)).0 == .unavailable)
        #expect(HeraldCommandLine.outcome(of: ExitCode.failure).0 == .failure)
        do {
            _ = try Herald.parseAsRoot(["--help"])
        } catch {
            #expect(HeraldCommandLine.outcome(of: error).0 == .success)
        }
        #expect(ExitStatus.allCases.map(\.rawValue) == [0, 1, 2, 3, 4])
        #expect(APIFailure(operation: "GET /v1/stats", status: 500, body: Array("<html>".utf8)).code == "http_500")
    }
}
