import Foundation
import HTTPTypes
import HeraldAPIContract
import Hummingbird

/// The devices page: the Open API's device look-ups (listDevices by alias, tag or token
/// prefix; getDevice by registration id).
extension ConsoleRoutes {
    struct DevicesPage {
        struct Row {
            var registrationID: String
            var token: String
            var environment: String
            var alias: String
            var tags: String
            /// What the device says about itself, for segments: country, versions, locale, custom
            /// attributes ("–" when nothing).
            var described: String
            var invalid: Bool
            var reason: String?
            var updatedAt: String
        }

        /// A line of the counts table: all devices, or one tag's.
        struct Counts {
            var label: String
            /// The look-up of the tag's devices (nil for all devices).
            var link: String?
            var active: String
            var production: String
            var sandbox: String
            var invalid: String

            init(label: String, link: String?, _ devices: Components.Schemas.DeviceCounts) {
                let environments = devices.byEnvironment.additionalProperties
                self.label = label
                self.link = link
                active = PushView.number(devices.active)
                production = PushView.number(environments["production"] ?? 0)
                sandbox = PushView.number(environments["sandbox"] ?? 0)
                invalid = PushView.number(devices.invalid)
            }
        }

        var chrome: Chrome
        var counts: [Counts]
        var hasCounts: Bool
        var tagPrefix: String
        var noTags: Bool
        var moreTags: String?
        var lookups: [Choice]
        var query: String
        var searched: Bool
        var devices: [Row]
        var hasDevices: Bool
        var next: String?
    }

    func devicesPage(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        guard signedIn.identity.sendsPushes else { return Self.adminHome(signedIn) }
        let parameters = request.uri.queryParameters
        let by = parameters.get("by") ?? "alias"
        let query = (parameters.get("q") ?? "").trimmingCharacters(in: .whitespaces)
        let cursor = parameters.get("cursor", as: Int64.self)
        let lookups = [("alias", "Alias"), ("id", "Registration id"), ("token", "Token prefix"), ("tag", "Tag")].map {
            Choice(value: $0.0, label: $0.1, selected: $0.0 == by)
        }
        var chrome = signedIn.chrome("Devices", section: .devices)
        var found: [Components.Schemas.Device] = []
        var next: String?
        if !query.isEmpty {
            do throws(ConsoleError) {
                switch by {
                case "id":
                    guard let id = Int64(query) else {
                        throw ConsoleError(.badRequest, code: .invalid, message: "A registration id is a number.")
                    }
                    let device = try await gateway.perform(
                        "getDevice", path: "/v1/devices/\(id)", as: signedIn.identity, request: signedIn.origin
                    ) { api in try await api.getDevice(.init(path: .init(registrationId: id))).ok.body.json }
                    found = [device]
                default:
                    let list = try await gateway.perform(
                        "listDevices", path: "/v1/devices", as: signedIn.identity, request: signedIn.origin
                    ) { api in
                        try await api.listDevices(
                            .init(
                                query: .init(
                                    alias: by == "alias" ? query : nil, tag: by == "tag" ? query : nil,
                                    tokenPrefix: by == "token" ? query : nil, cursor: cursor, limit: 50))
                        ).ok.body.json
                    }
                    found = list.devices
                    next = list.nextCursor.map {
                        "/console/devices?by=\(by)&q=\(Self.queryValue(query))&cursor=\($0)"
                    }
                }
            } catch {
                if error.status == .notFound {
                    found = []
                } else {
                    chrome.error = error.message
                }
            }
        }
        let counts = await tagCounts(request, signedIn: signedIn, chrome: &chrome)
        let rows = found.map { device in
            DevicesPage.Row(
                registrationID: device.registrationId.map(String.init) ?? "–", token: device.tokenPrefix ?? "",
                environment: device.environment.rawValue, alias: device.alias ?? "–",
                tags: device.tags.joined(separator: ", "), described: Self.described(device),
                invalid: device.status == .invalid,
                reason: device.invalidReason, updatedAt: PushView.time(device.updatedAt))
        }
        let page = DevicesPage(
            chrome: chrome, counts: counts.lines, hasCounts: !counts.lines.isEmpty, tagPrefix: counts.prefix,
            noTags: counts.lines.count == 1,
            moreTags: counts.more, lookups: lookups, query: query, searched: !query.isEmpty, devices: rows,
            hasDevices: !rows.isEmpty, next: next)
        return Self.html(ConsoleTemplates.render("devices", page), status: chrome.error == nil ? .ok : .badRequest)
    }

    /// The counts table: all the app's devices (getStatistics), then a page of its tags
    /// (listTagStatistics, `tag_prefix` and the `tags_after` cursor) — kept counts, not counted
    /// per request.
    private func tagCounts(
        _ request: Request, signedIn: SignedIn, chrome: inout Chrome
    ) async -> (lines: [DevicesPage.Counts], prefix: String, more: String?) {
        let parameters = request.uri.queryParameters
        let prefix = (parameters.get("tag_prefix") ?? "").trimmingCharacters(in: .whitespaces)
        let after = parameters.get("tags_after").flatMap { $0.isEmpty ? nil : $0 }
        do throws(ConsoleError) {
            let statistics = try await gateway.perform(
                "getStatistics", path: "/v1/stats", as: signedIn.identity, request: signedIn.origin
            ) { api in try await api.getStatistics(.init(query: .init(since: Date()))).ok.body.json }
            let tags = try await gateway.perform(
                "listTagStatistics", path: "/v1/stats/tags", as: signedIn.identity, request: signedIn.origin
            ) { api in
                try await api.listTagStatistics(
                    .init(query: .init(prefix: prefix.isEmpty ? nil : prefix, cursor: after, limit: 50))
                ).ok.body.json
            }
            let lines =
                [DevicesPage.Counts(label: "All devices", link: nil, statistics.devices)]
                + tags.tags.map {
                    DevicesPage.Counts(
                        label: $0.tag, link: "/console/devices?by=tag&q=\(Self.queryValue($0.tag))", $0.devices)
                }
            let more = tags.nextCursor.map {
                "/console/devices?tag_prefix=\(Self.queryValue(prefix))&tags_after=\(Self.queryValue($0))"
            }
            return (lines, prefix, more)
        } catch {
            chrome.error = error.message
            return ([], prefix, nil)
        }
    }

    /// A device's attributes on one line: `DE · app 5.2.1 · OS 17.1 · de_DE · plan=gold`.
    static func described(_ device: Components.Schemas.Device) -> String {
        var parts = [
            device.country, device.appVersion.map { "app \($0)" }, device.osVersion.map { "OS \($0)" }, device.locale,
        ]
        .compactMap { $0 }
        if let attributes = device.attributes?.additionalProperties.value {
            for (name, value) in attributes.sorted(by: { $0.key < $1.key }) {
                parts.append("\(name)=\(value.map { "\($0)" } ?? "null")")
            }
        }
        return parts.isEmpty ? "–" : parts.joined(separator: " · ")
    }
}
