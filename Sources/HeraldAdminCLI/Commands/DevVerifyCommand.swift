import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldAPIContract
import HeraldAPNs
import HeraldAPNsVocabulary
import HeraldCLI
import NIOCore
import NIOFoundationCompat

/// `herald dev verify PUSH…`: checks what Herald says about finished pushes against what the
/// stack's apns-sim recorded — the demo's and the end-to-end tests' proof.
///
/// For each push: it is completed and its counters add up to the audience; apns-sim received
/// exactly the accepted devices (matched by the deterministic `apns-id` Herald gives each
/// (push, device)); none of them is among the push's failures; every device a permanent
/// rejection names ends invalidated. Repeated deliveries (a sender killed mid-batch) are
/// reported and must carry the same collapse id.
struct DevVerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check finished pushes against what apns-sim received (exactly the accepted devices, no more).")

    @OptionGroup var dir: DevDirectoryOption
    @Argument(help: "Push ids.") var pushIDs: [String]
    @Flag(
        name: .customLong("allow-duplicates"),
        help: "Tolerate repeated deliveries with the same apns-id and collapse id (after a sender was killed).")
    var allowDuplicates = false

    struct Device {
        var id: Int
        var prefix: String
        var status: String
    }

    func run() async throws {
        let stack = try DevStack.load(from: dir.path)
        let api = try StackVerificationAPI.app()

        // The app's devices (active and invalid), by registration id.
        var devices: [Int: Device] = [:]
        let listed = try await api.devices()
        // A server key's listing carries every registration id.
        for device in listed {
            guard let registrationID = device.registrationId else { continue }
            let id = Int(registrationID)
            devices[id] = Device(id: id, prefix: device.tokenPrefix ?? "", status: device.status.rawValue)
        }

        let recorded = try await Self.recordedNotifications(adminURL: "http://127.0.0.1:\(stack.apnsSim.adminPort)")
        var allGood = true
        for pushID in pushIDs {
            allGood = try await verify(pushID: pushID, api: api, devices: devices, recorded: recorded) && allGood
        }
        if !allGood { throw ExitCode.failure }
    }

    private func verify(
        pushID: String, api: StackVerificationAPI, devices: [Int: Device],
        recorded: [String: [(collapseID: String?, token: String)]]
    ) async throws -> Bool {
        guard let uuid = UUID(uuidString: pushID) else { throw ValidationError("\(pushID) is not a push id") }
        let status = try await api.push(pushID)
        let counters = PushProgress.Counters(status.counters)
        let listed = try await api.failures(pushID: pushID)
        var failures: [Int: String] = [:]
        for failure in listed { failures[Int(failure.registrationId)] = failure.reason ?? failure.status.rawValue }

        var delivered = 0
        var repeated = 0
        var deliveredButFailed = 0
        var mixedCollapse = 0
        for device in devices.values {
            guard let copies = recorded[APNsNotification.deterministicID(pushID: uuid, deviceID: Int64(device.id))]
            else { continue }
            delivered += 1
            repeated += copies.count - 1
            if Set(copies.map { $0.collapseID ?? "" }).count > 1 { mixedCollapse += 1 }
            if failures[device.id] != nil { deliveredButFailed += 1 }
        }
        // The reasons for which herald-center invalidates a token (the sender's own rule).
        let shouldBeInvalid = failures.filter { APNsReason($0.value).invalidatesToken }.map(\.key)
        let notInvalidated = shouldBeInvalid.filter { devices[$0]?.status != "invalid" }.count

        var checks: [(Bool, String)] = [
            (status.state == .completed, "state \(status.state.rawValue)"),
            (
                PushProgress.addsUp(status),
                "targeted \(counters.targeted) = accepted \(counters.accepted) + online \(counters.deliveredOnline) + rejected \(counters.rejected) + expired \(counters.expired) + canceled \(counters.canceled) + skipped \(counters.skipped)"
            ),
            (
                delivered == Int(counters.accepted),
                "apns-sim received \(delivered) distinct devices; Herald counted \(counters.accepted) accepted"
            ),
            (deliveredButFailed == 0, "\(deliveredButFailed) devices received it although Herald lists them as failed"),
            (
                failures.count == Int(counters.rejected + counters.expired + counters.canceled),
                "\(failures.count) failures listed for \(counters.rejected + counters.expired + counters.canceled) not accepted"
            ),
            (
                notInvalidated == 0,
                "\(shouldBeInvalid.count - notInvalidated) of \(shouldBeInvalid.count) permanently rejected tokens invalidated"
            ),
            (mixedCollapse == 0, "\(mixedCollapse) devices got copies with different collapse ids"),
        ]
        checks.append((repeated == 0 || allowDuplicates, "\(repeated) repeated deliveries (same apns-id)"))
        print("push \(pushID):")
        for (ok, text) in checks { print("  \(ok ? "✔" : "✘") \(text)") }
        CommandSupport.printJSON([
            "push": pushID, "ok": checks.allSatisfy(\.0), "targeted": counters.targeted, "accepted": counters.accepted,
            "delivered_online": counters.deliveredOnline,
            "rejected": counters.rejected, "expired": counters.expired, "canceled": counters.canceled,
            "skipped": counters.skipped, "delivered": delivered, "repeated": repeated,
            "invalidated": shouldBeInvalid.count - notInvalidated,
        ])
        return checks.allSatisfy(\.0)
    }

    /// apns-sim's accepted notifications by apns-id.
    static func recordedNotifications(adminURL: String) async throws -> [String: [(collapseID: String?, token: String)]]
    {
        var request = HTTPClientRequest(url: adminURL + "/notifications")
        request.method = .GET
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(300))
        let body = try await response.body.collect(upTo: 2 << 30)
        guard response.status.code == 200 else {
            throw CLIError("apns-sim /notifications answered \(response.status.code)")
        }
        var result: [String: [(collapseID: String?, token: String)]] = [:]
        let data = Data(buffer: body)
        for line in data.split(separator: UInt8(ascii: "\n")) {
            guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any],
                let apnsID = (object["apnsID"] as? String)?.uppercased()
            else { continue }
            result[apnsID, default: []].append((object["collapseID"] as? String, object["token"] as? String ?? ""))
        }
        return result
    }
}
