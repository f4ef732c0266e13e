#if canImport(UserNotifications)
import Foundation
import HeraldKit
import UserNotifications

/// HeraldKit's ``HeraldKit/HeraldNotificationCenter`` over Apple's `UNUserNotificationCenter`: the
/// only code of the SDK that touches UserNotifications. Every decision is HeraldKit's (tested
/// on Linux against a fake centre); this adapter only reads and writes the system's lists.
///
/// Not compiled by this repository's tests, which run on Linux (docs/sdk.md).
public struct SystemNotificationCenter: HeraldNotificationCenter {
    public init() {}

    private var center: UNUserNotificationCenter { .current() }

    public func delivered() async -> [NotificationRecord] {
        await center.deliveredNotifications().map { Self.record($0.request) }
    }

    public func pending() async -> [NotificationRecord] {
        await center.pendingNotificationRequests().map(Self.record)
    }

    public func removeDelivered(identifiers: [String]) async {
        center.removeDeliveredNotifications(withIdentifiers: identifiers)
    }

    public func removePending(identifiers: [String]) async {
        center.removePendingNotificationRequests(withIdentifiers: identifiers)
    }

    public func add(_ notification: LocalNotification) async throws {
        let content = UNMutableNotificationContent()
        content.title = notification.title ?? ""
        content.subtitle = notification.subtitle ?? ""
        content.body = notification.body ?? ""
        content.badge = notification.badge.map { NSNumber(value: $0) }
        if let sound = notification.sound {
            content.sound = sound == "default" ? .default : UNNotificationSound(named: UNNotificationSoundName(sound))
        }
        content.threadIdentifier = notification.threadIdentifier ?? ""
        content.categoryIdentifier = notification.categoryIdentifier ?? ""
        content.userInfo = notification.userInfo.mapValues(\.foundationObject)
        let trigger = notification.trigger.map {
            UNCalendarNotificationTrigger(dateMatching: $0.dateComponents, repeats: $0.repeats != .never)
        }
        try await center.add(
            UNNotificationRequest(identifier: notification.identifier, content: content, trigger: trigger))
    }

    /// Asks the user to allow notifications; the answer as the API's `authorization_status`.
    public func requestAuthorization(options: UNAuthorizationOptions = [.alert, .badge, .sound]) async -> String {
        _ = try? await center.requestAuthorization(options: options)
        return await authorizationStatus()
    }

    /// The user's current choice as the API's `authorization_status`.
    public func authorizationStatus() async -> String {
        let status = await center.notificationSettings().authorizationStatus
        switch status {
        case .authorized: return "authorized"
        case .provisional: return "provisional"
        case .denied: return "denied"
        default:
            #if os(iOS) || os(visionOS)
            // An App Clip's temporary permission; the case does not exist on macOS.
            if status == .ephemeral { return "ephemeral" }
            #endif
            return "not_determined"
        }
    }

    /// Registers the app's notification categories and their actions.
    public func setCategories(_ categories: Set<UNNotificationCategory>) {
        center.setNotificationCategories(categories)
    }

    /// Sets the app icon's badge. Before iOS 16 and macOS 13 the system has no such call on the
    /// notification centre: set `UIApplication.shared.applicationIconBadgeNumber` (or the dock
    /// tile's badge) yourself there.
    @available(iOS 16.0, macOS 13.0, *)
    public func setBadge(_ count: Int) async throws {
        try await center.setBadgeCount(count)
    }

    static func record(_ request: UNNotificationRequest) -> NotificationRecord {
        NotificationRecord(
            identifier: request.identifier, pushID: HeraldPayload(userInfo: request.content.userInfo)?.pushID)
    }
}

/// The delegate hooks that turn what the user did into HeraldKit's calls: set an instance as
/// `UNUserNotificationCenter.current().delegate` (and keep it alive) in
/// `application(_:didFinishLaunchingWithOptions:)`.
public final class HeraldNotificationDelegate: NSObject, UNUserNotificationCenterDelegate, Sendable {
    let client: HeraldClient

    public init(client: HeraldClient) {
        self.client = client
    }

    /// A notification arrived while the app is in the foreground: shown unless the long
    /// connection brought its push already, or it is a recall.
    public func userNotificationCenter(
        _ center: UNUserNotificationCenter, willPresent notification: UNNotification
    ) async -> UNNotificationPresentationOptions {
        switch await client.handleRemoteNotification(userInfo: notification.request.content.userInfo) {
        case .show, .notHerald: [.banner, .list, .sound, .badge]
        case .duplicate, .revoked: []
        }
    }

    /// The user tapped the notification or chose an action: `opened`, `action` or `dismissed`.
    public func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse
    ) async {
        guard let herald = HeraldPayload(userInfo: response.notification.request.content.userInfo) else { return }
        switch response.actionIdentifier {
        case UNNotificationDefaultActionIdentifier:
            await client.report(.opened, pushID: herald.pushID)
        case UNNotificationDismissActionIdentifier:
            await client.report(.dismissed, pushID: herald.pushID)
        default:
            await client.report(
                .action, pushID: herald.pushID, action: response.actionIdentifier,
                textInput: response is UNTextInputNotificationResponse)
        }
    }
}

/// For a notification service extension (an alert sent with mutable-content): reports
/// `received` and attaches the image or video the payload names under `media_url`.
public enum HeraldServiceExtension {
    /// Give `client` a `FileStorage` in the app group's container, so the app and the
    /// extension share the registration and the queued events.
    public static func didReceive(
        _ request: UNNotificationRequest, client: HeraldClient
    ) async -> UNNotificationContent {
        guard let content = request.content.mutableCopy() as? UNMutableNotificationContent else {
            return request.content
        }
        if let herald = HeraldPayload(userInfo: content.userInfo) {
            await client.report(.received, pushID: herald.pushID)
        }
        if let text = content.userInfo["media_url"] as? String, let url = URL(string: text),
            url.scheme == "https",
            let (file, _) = try? await URLSession.shared.download(from: url)
        {
            let named = file.appendingPathExtension(url.pathExtension)
            try? FileManager.default.moveItem(at: file, to: named)
            if let attachment = try? UNNotificationAttachment(identifier: "media", url: named) {
                content.attachments = [attachment]
            }
        }
        return content
    }
}
#endif
