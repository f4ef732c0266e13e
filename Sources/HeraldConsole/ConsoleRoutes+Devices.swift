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
            var invalid: Bool
            var reason: String?
            var updatedAt: String
        }

        var chrome: Chrome
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
                        throw ConsoleError(.badRequest, code: "invalid", message: "A registration id is a number.")
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
                        "/console/devices?by=\(by)&q=\(query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")&cursor=\($0)"
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
        let rows = found.map { device in
            DevicesPage.Row(
                registrationID: device.registrationId.map(String.init) ?? "–", token: device.tokenPrefix ?? "",
                environment: device.environment.rawValue, alias: device.alias ?? "–",
                tags: device.tags.joined(separator: ", "), invalid: device.status == .invalid,
                reason: device.invalidReason, updatedAt: PushView.time(device.updatedAt))
        }
        let page = DevicesPage(
            chrome: chrome, lookups: lookups, query: query, searched: !query.isEmpty, devices: rows,
            hasDevices: !rows.isEmpty, next: next)
        return Self.html(ConsoleTemplates.render("devices", page), status: chrome.error == nil ? .ok : .badRequest)
    }
}
