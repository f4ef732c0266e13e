// fanout-throughput: pushes to 1,000,000 devices resolved from PostgreSQL and enqueued into the
// broker by a herald-center process — a broadcast, a tag audience, a segment on device attributes
// that hold every device, and a broadcast of a personalized, localized notification rendered per
// device — each against psql's COPY of the same rows to /dev/null in the same run; prints
// devices/s, the center's CPU per device, where its time went (its fan-out step counters on
// /metrics) and its peak RSS, the segment's rate against the tag audience's
// (docs/segments.md: at least 0.5) and what rendering costs a notification against the plain
// broadcast (docs/templates.md), and a broadcast under the app's delivery policy — quiet hours
// checked in each device's time zone and a frequency cap counted over the earlier rounds'
// campaigns, nobody left out — against the plain broadcast (docs/delivery-policy.md: at most 10%
// slower).
//
// Run it with `make bench-fanout` (release build, PostgreSQL and the development broker up).
import ArgumentParser
import BenchmarkSupport
import Foundation
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import HeraldRecords
import HeraldStore
import Logging
import PostgresNIO

@main
struct FanoutThroughput: AsyncParsableCommand {
    @Option(help: "Devices in the broadcast.") var devices = 1_000_000
    @Option(help: "Folder with herald-center (release build).") var binaries = ".build/release"
    @Option(help: "Devices per keyset page (HERALD_CENTER_PAGE_SIZE).") var pageSize = 10_000
    @Option(help: "Rounds; the median is reported.") var rounds = 3
    @Option(help: "A free port for the center's /metrics (its fan-out step counters are read there).")
    var metricsPort = 19_466
    @Option(help: "Only this case (broadcast, tag, segment, template, policy; repeatable); every one by default.")
    var only: [String] = []

    func run() async throws {
        var configuration = try await HeraldConfiguration.load()
        let logger = Logger(label: "bench.fanout")
        let database = "herald_bench_fanout"
        try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { admin in
            try await admin.query("DROP DATABASE IF EXISTS \(unescaped: database) WITH (FORCE)", logger: logger)
            try await admin.query("CREATE DATABASE \(unescaped: database)", logger: logger)
        }
        configuration.postgres.database = database
        let postgres = configuration.postgres
        try await HeraldDatabase.withClient(settings: postgres, logger: logger) { client in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "fan-out benchmark", bundleID: "com.herald.bench")
            let insertStart = ContinuousClock.now
            try await client.query(
                """
                INSERT INTO devices (app_id, token, environment, topic, country, app_version, os_version, attributes,
                                     locale, time_zone)
                SELECT \(app.id), decode(lpad(to_hex(n), 64, '0'), 'hex'), 'production', 'com.herald.bench',
                       (ARRAY['DE', 'FR', 'US', 'JP'])[n % 4 + 1], '5.' || (n % 20) || '.0', '17.' || (n % 5),
                       jsonb_build_object('plan', CASE WHEN n % 3 = 0 THEN 'gold' ELSE 'free' END, 'score', n % 100),
                       (ARRAY['de_DE', 'fr_FR', 'en_US', 'de_AT', NULL])[n % 5 + 1],
                       (ARRAY['Europe/Berlin', 'America/New_York', 'Asia/Tokyo', 'America/Los_Angeles', NULL])[n % 5 + 1]
                FROM generate_series(1, \(Int32(devices))) AS n
                """, logger: logger)
            try await client.query(
                "INSERT INTO device_tags (app_id, tag, device_id) SELECT \(app.id), 'bench', id FROM devices",
                logger: logger)
            try await client.query("VACUUM ANALYZE devices, device_tags", logger: logger)
            print(
                "devices: \(devices) inserted, each tagged and with attributes, in \(ContinuousClock.now - insertStart)"
            )

            // Every device is in each audience: the cases differ in how PostgreSQL finds them.
            let filter = try AudienceFilter(
                json: JSONValue(
                    jsonText:
                        #"{"and":[{"attribute":"app_version","op":"gte","value":"5.0"},{"attribute":"attributes.plan","op":"in","value":["gold","free"]},{"not":{"attribute":"country","op":"eq","value":"XX"}}]}"#
                ))
            // A notification with three placeholders and texts for de and de-AT: a payload per device.
            let plain = APNsPayload(
                alert: .details(
                    .init(
                        title: "Hi {{plan | default: \"there\"}}, {{country | default: \"friend\"}}",
                        body: "Your score this week: {{score | default: \"0\"}} points")))
            var german = plain
            german.alert = .details(
                .init(title: "Hallo {{plan | default: \"du\"}}", body: "Dein Punktestand: {{score | default: \"0\"}}"))
            var austrian = plain
            austrian.alert = .details(.init(title: "Servus {{plan | default: \"du\"}}", body: "{{score}} Punkte"))
            let template = PayloadTemplate.storedJSON(
                default: plain.encoded(), localized: [("de", german.encoded()), ("de-at", austrian.encoded())])
            let cases: [(name: String, audience: PushAudience, template: [UInt8]?)] = [
                ("broadcast", .everyone, nil), ("tag", PushAudience(tags: .init(any: ["bench"])), nil),
                ("segment", PushAudience(filter: filter), nil), ("template", .everyone, template),
                ("policy", .everyone, nil),
            ]
            var medians: [String: Double] = [:]
            // The center's CPU per device, µs (median of the rounds).
            var cpuMedians: [String: Double] = [:]
            for (name, audience, template) in cases where only.isEmpty || only.contains(name) {
                if name == "policy" {
                    // Quiet hours nobody is in for the next hours (half a day from UTC's time now: 11
                    // to 13 hours from the devices' zones), every device's zone still looked up; a
                    // cap nobody reaches, every device counted over the earlier rounds' campaigns.
                    let minute = (Int(Date().timeIntervalSince1970 / 60) + 720) % 1440
                    _ = try await AppRepository(client: client, logger: logger).update(
                        id: app.id,
                        .init(
                            deliveryPolicy: .some(
                                DeliveryPolicy(
                                    quietHours: .init(startMinute: minute, endMinute: (minute + 30) % 1440),
                                    frequencyCap: .init(maxPushes: 1000, windowSeconds: 86_400)))))
                }
                print(
                    "== \(name): \(audience.json)\(template == nil ? "" : " with a personalized, localized notification")"
                )
                var selection = AudienceSelection(appID: app.id, audience: audience)
                if let template { selection.personalization = try PayloadTemplate(stored: template).personalization() }
                var copySeconds: [Double] = []
                var fanoutSeconds: [Double] = []
                var peakRSS: [Int] = []
                var cpuPerDevice: [Double] = []
                for round in 1...rounds {
                    // Reference: the same rows, the same index, streamed by PostgreSQL's COPY to /dev/null.
                    let copy = try BenchmarkProcesses.launch(
                        "/usr/bin/psql",
                        [
                            "-h", postgres.host, "-p", "\(postgres.port)", "-U", postgres.user, "-d", database, "-c",
                            "\\copy (\(AudienceRepository.copyStatement(selection))) TO '/dev/null'",
                        ],
                        environment: ProcessInfo.processInfo.environment.merging(["PGPASSWORD": postgres.password]) {
                            $1
                        })
                    let copyStart = ContinuousClock.now
                    copy.waitUntilExit()
                    copySeconds.append(Self.seconds(ContinuousClock.now - copyStart))

                    let center = try BenchmarkProcesses.launch(
                        binaries + "/herald-center", [], log: "/tmp/fanout-bench-center.log",
                        environment: ProcessInfo.processInfo.environment.merging([
                            "HERALD_POSTGRES_DATABASE": database, "HERALD_CENTER_PAGE_SIZE": "\(pageSize)",
                            "HERALD_CENTER_METRICS_PORT": "\(metricsPort)",
                            "HERALD_CENTER_NAME": "bench-center", "HERALD_LOG_LEVEL": "warning",
                            // No sender answers here: a fan-out window would hold the last page
                            // for outcomes that never come (the fan-out alone is measured).
                            "HERALD_CENTER_FANOUT_WINDOW": "0",
                        ]) { $1 })
                    try await Task.sleep(for: .seconds(2))
                    let stepsBefore = Self.fanoutSteps(metricsPort: metricsPort)
                    let cpuBefore = BenchmarkProcesses.cpuSeconds(of: center.processIdentifier)
                    let pushID = UUID()
                    _ = try await PushRepository(client: client, logger: logger).create(
                        NewPush(
                            id: pushID, appID: app.id, audienceJSON: audience.json, notificationJSON: "{}",
                            payload: Array(#"{"aps":{"alert":"benchmark"}}"#.utf8), template: template),
                        announcement: try .pushEvent(
                            .created, pushID: pushID, appID: app.id, topic: HeraldTopic.pushes.name))
                    var peak = 0
                    var elapsed: Double?
                    let deadline = ContinuousClock.now + .seconds(600)
                    while elapsed == nil, ContinuousClock.now < deadline, center.isRunning {
                        peak = max(peak, Self.peakRSS(of: center.processIdentifier))
                        let rows = try await client.query(
                            """
                            SELECT EXTRACT(EPOCH FROM fanout_finished_at - fanout_started_at)::float8 FROM pushes
                            WHERE id = \(pushID) AND fanout_finished_at IS NOT NULL
                            """, logger: logger)
                        for try await seconds in rows.decode(Double.self) { elapsed = seconds }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    peak = max(peak, Self.peakRSS(of: center.processIdentifier))
                    let cpu = BenchmarkProcesses.cpuSeconds(of: center.processIdentifier) - cpuBefore
                    let steps = Self.fanoutSteps(metricsPort: metricsPort).map {
                        ($0.0, $0.1 - (stepsBefore[$0.0] ?? 0))
                    }
                    BenchmarkProcesses.stop(center)
                    guard let elapsed else {
                        throw ValidationError("the fan-out did not finish; see /tmp/fanout-bench-center.log")
                    }
                    // Every device targeted once, in batches of at most 500 (as recorded by the center;
                    // a templated push's are smaller).
                    let counted = try await client.query(
                        """
                        SELECT c.targeted, p.batches_emitted, (SELECT count(*) FROM push_batches b WHERE b.push_id = p.id AND b.produced_at IS NOT NULL)
                        FROM pushes p JOIN push_counters c ON c.push_id = p.id WHERE p.id = \(pushID)
                        """, logger: logger)
                    for try await (targeted, batches, produced) in counted.decode((Int64, Int32, Int64).self) {
                        guard targeted == devices, Int64(batches) == produced, produced >= Int64(devices / 500) else {
                            throw ValidationError(
                                "the fan-out targeted \(targeted) of \(devices) devices in \(produced) produced batches of \(batches)"
                            )
                        }
                    }
                    fanoutSeconds.append(elapsed)
                    peakRSS.append(peak)
                    cpuPerDevice.append(cpu / Double(devices) * 1e6)
                    print(
                        String(
                            format:
                                "round %d: center %.2f s (%.0f devices/s), CPU %.2f s (%.2f µs a device), peak RSS %d MB; psql COPY %.2f s (%.0f rows/s)",
                            round, elapsed, Double(devices) / elapsed, cpu, cpuPerDevice.last!, peak / 1024,
                            copySeconds.last!, Double(devices) / copySeconds.last!))
                    print(
                        "  the center's fan-out steps (s): "
                            + steps.sorted { $0.0 < $1.0 }.map { String(format: "%@ %.2f", $0.0, $0.1) }.joined(
                                separator: ", "))
                }
                let center = BenchmarkProcesses.median(fanoutSeconds)
                let copy = BenchmarkProcesses.median(copySeconds)
                medians[name] = center
                cpuMedians[name] = BenchmarkProcesses.median(cpuPerDevice)
                print(
                    String(
                        format:
                            "median %@: herald-center %.0f devices/s, psql COPY %.0f rows/s, ratio %.2f (target ≥ 0.50); center CPU %.2f µs a device; peak RSS %d MB (target ≤ 150)",
                        name, Double(devices) / center, Double(devices) / copy, copy / center, cpuMedians[name]!,
                        (peakRSS.max() ?? 0) / 1024))
            }
            if let tag = medians["tag"], let segment = medians["segment"] {
                print(
                    String(
                        format: "segment against tag audience: %.0f vs %.0f devices/s, ratio %.2f (target ≥ 0.50)",
                        Double(devices) / segment, Double(devices) / tag, tag / segment))
            }
            if let broadcast = medians["broadcast"], let policed = medians["policy"] {
                print(
                    String(
                        format:
                            "delivery policy against broadcast: %.0f vs %.0f devices/s, %.1f%% slower (target ≤ 10%%); %.2f µs a device",
                        Double(devices) / policed, Double(devices) / broadcast, (policed / broadcast - 1) * 100,
                        (policed - broadcast) / Double(devices) * 1e6))
            }
            if let broadcast = medians["broadcast"], let rendered = medians["template"] {
                print(
                    String(
                        format:
                            "template against broadcast: %.0f vs %.0f devices/s, ratio %.2f; rendering costs %.2f µs a notification (wall clock), %.2f µs of the center's CPU",
                        Double(devices) / rendered, Double(devices) / broadcast, broadcast / rendered,
                        (rendered - broadcast) / Double(devices) * 1e6,
                        cpuMedians["template"]! - cpuMedians["broadcast"]!))
            }
        }
        try await HeraldDatabase.withClient(settings: try await HeraldConfiguration.load().postgres, logger: logger) {
            admin in
            try await admin.query("DROP DATABASE IF EXISTS \(unescaped: database) WITH (FORCE)", logger: logger)
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// The center's `herald_center_fanout_step_seconds_total` by step (empty when /metrics does not answer).
    static func fanoutSteps(metricsPort: Int) -> [String: Double] {
        let text =
            (try? BenchmarkProcesses.output("/usr/bin/curl", ["-s", "http://127.0.0.1:\(metricsPort)/metrics"])) ?? ""
        var steps: [String: Double] = [:]
        let prefix = "herald_center_fanout_step_seconds_total{step=\""
        for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
            let rest = line.dropFirst(prefix.count)
            guard let quote = rest.firstIndex(of: "\""),
                let value = Double(rest[quote...].split(separator: " ").last ?? "")
            else { continue }
            steps[String(rest[..<quote])] = value
        }
        return steps
    }

    /// VmHWM of a process in KiB (0 when it is gone).
    static func peakRSS(of pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) ?? 0
        }
        return 0
    }
}
