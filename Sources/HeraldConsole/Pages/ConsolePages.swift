import Foundation
import HeraldStore

/// What the layout shows around every signed-in page.
struct Chrome {
    enum Section { case pushes, compose, schedules, devices, stats, apps }

    var title: String
    var appName: String?
    /// `server key hs_abc…` or `admin`.
    var signedInAs: String
    var csrf: String
    var sendsPushes: Bool
    var managesApps: Bool
    /// The admin token (all apps), not an app's admin key.
    var globalAdmin: Bool
    var onPushes: Bool
    var onDevices: Bool
    var onStats: Bool
    var onApps: Bool
    var onCompose: Bool
    var onSchedules: Bool
    var notice: String?
    var error: String?

    init(title: String, identity: ConsoleIdentity, csrf: String, section: Section?) {
        self.title = title
        appName = identity.appName
        if let key = identity.key {
            let name = key.name.isEmpty ? "" : " “\(key.name)”"
            signedInAs = "\(key.kind.rawValue) key\(name) \(key.keyPrefix)…"
        } else {
            signedInAs = "admin"
        }
        self.csrf = csrf
        sendsPushes = identity.sendsPushes
        managesApps = identity.managesApps
        globalAdmin = identity.role == .admin
        onPushes = section == .pushes
        onDevices = section == .devices
        onStats = section == .stats
        onApps = section == .apps
        onCompose = section == .compose
        onSchedules = section == .schedules
    }
}

/// A choice a page offers: a filter link (`value` is its address) or a select's option.
struct Choice {
    var value: String
    var label: String
    var selected: Bool
}

struct SignInPage {
    var csrf: String
    var error: String?
    var notice: String?
}

struct MessagePage {
    struct Link {
        var href: String
        var label: String
    }

    var chrome: Chrome
    var heading: String
    var text: String
    var link: Link?
}

struct ConfirmPage {
    var chrome: Chrome
    var heading: String
    var text: String
    var action: String
    var button: String
    var back: String
}
