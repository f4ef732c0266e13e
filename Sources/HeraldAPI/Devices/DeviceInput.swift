import Foundation
import HeraldAPIContract
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldStore

/// The checks every device registration passes, from the API or an import line.
enum DeviceInput {
    /// The token's bytes from its hexadecimal text (8 to 100 bytes).
    static func token(_ text: String, field: String = "token") throws(APIError) -> [UInt8] {
        let digits = text.utf8.count
        guard digits % 2 == 0, (16...200).contains(digits) else {
            throw .invalid(field, "a device token is 16 to 200 hexadecimal digits (APNs tokens are 64)")
        }
        guard let bytes = Hexadecimal.decode(text) else {
            throw .invalid(field, "a device token is hexadecimal digits only (0-9, a-f)")
        }
        return bytes
    }

    static func alias(_ alias: String?, field: String = "alias") throws(APIError) {
        guard let alias else { return }
        guard (1...128).contains(alias.storedLength), !alias.contains(where: \.isNewline) else {
            throw .invalid(field, "an alias is 1 to 128 characters on one line")
        }
    }

    static func tags(
        _ tags: [String]?, field: String = "tags", maximum: Int = DeviceLimits.maximumTagsPerDevice
    ) throws(APIError) {
        guard let tags else { return }
        guard tags.count <= maximum else {
            throw .invalid(
                field,
                maximum == DeviceLimits.maximumTagsPerDevice
                    ? "a device carries at most \(maximum) tags" : "at most \(maximum) tags")
        }
        if let bad = tags.firstIndex(where: {
            !(1...64).contains($0.storedLength) || $0.contains(where: { $0.isNewline || $0 == "\t" })
        }) {
            throw .invalid("\(field)[\(bad)]", "a tag is 1 to 64 characters, without tabs or line breaks")
        }
    }

    static func text(_ value: String?, field: String, maximum: Int) throws(APIError) {
        guard let value else { return }
        guard (1...maximum).contains(value.storedLength), !value.contains(where: \.isNewline) else {
            throw .invalid(field, "\(field) is 1 to \(maximum) characters on one line")
        }
    }

    static func timeZone(_ value: String?, field: String = "time_zone") throws(APIError) {
        guard let value else { return }
        guard value.count <= 64, TimeZone(identifier: value) != nil else {
            throw .invalid(field, "time_zone is an IANA time zone such as Europe/Berlin")
        }
    }

    /// A registration checked as a whole.
    static func registration(_ body: Components.Schemas.DeviceRegistration, appID: UUID, bundleID: String)
        throws(APIError) -> DeviceRegistration
    {
        let token = try token(body.token)
        let previousToken = try body.previousToken.map { (text) throws(APIError) in
            try Self.token(text, field: "previous_token")
        }
        if previousToken == token {
            throw .invalid("previous_token", "previous_token is the token this device had before; it equals token")
        }
        try alias(body.alias)
        try tags(body.tags)
        try text(body.topic, field: "topic", maximum: 255)
        if let topic = body.topic, !APNsPushType.topics(forBundleID: bundleID).contains(topic) {
            throw .invalid(
                "topic",
                "topic is the app's bundle id (\(bundleID)) or it followed by an APNs push-type suffix such as .voip; leave it out for the bundle id"
            )
        }
        try text(body.locale, field: "locale", maximum: 35)
        try timeZone(body.timeZone)
        let described = try described(
            country: body.country, appVersion: body.appVersion, osVersion: body.osVersion, attributes: body.attributes)
        var registration = DeviceRegistration(
            appID: appID, token: token, environment: body.environment.store, topic: body.topic ?? bundleID,
            alias: body.alias, tags: body.tags ?? [], locale: body.locale, timeZone: body.timeZone,
            country: described.country, appVersion: body.appVersion, osVersion: body.osVersion,
            attributes: described.attributes,
            authorizationStatus: body.authorizationStatus.flatMap { AuthorizationStatus(rawValue: $0.rawValue) })
        registration.previousToken = previousToken
        return registration
    }

    /// What a device says about itself beyond its token, checked: the country (upper-cased), the
    /// versions, and the custom attributes as stored (``DeviceAttributes/normalized(_:)``).
    static func described(
        country: String?, appVersion: String?, osVersion: String?, attributes: Components.Schemas.DeviceAttributes?
    ) throws(APIError) -> (country: String?, attributes: (set: [String: JSONValue], removed: [String])) {
        if let country,
            country.unicodeScalars.count != 2
                || !country.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) || ("a"..."z").contains($0) })
        {
            throw .invalid("country", "country is an ISO 3166-1 alpha-2 code such as DE")
        }
        for (field, version) in [("app_version", appVersion), ("os_version", osVersion)] {
            if let version, !AudienceFilter.isVersion(version) {
                throw .invalid(
                    field, "\(field) is a version such as 5.2.0: numbers and dots, optionally a suffix (5.2.0-beta1)")
            }
        }
        var normalized: (set: [String: JSONValue], removed: [String]) = ([:], [])
        if let attributes {
            guard let json = try? JSONValue(encoding: attributes), case .object(let fields) = json else {
                throw .invalid("attributes", "attributes is a JSON object")
            }
            do {
                normalized = try DeviceAttributes.normalized(fields)
            } catch {
                throw .invalid(error.name.map { "attributes.\($0)" } ?? "attributes", error.message)
            }
        }
        return (country?.uppercased(), normalized)
    }
}

extension JSONValue {
    /// A contract type as JSON (its free-form objects keep their values' types).
    init(encoding value: some Encodable) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
    }

    /// This JSON as a contract type.
    func decoded<Value: Decodable>(as type: Value.Type) throws -> Value {
        try JSONDecoder().decode(type, from: JSONEncoder().encode(self))
    }
}

extension String {
    /// The length PostgreSQL counts (`length(text)`: code points), which the schema's limits
    /// check. `count` counts what a person sees: "é" written as e and a combining accent is one
    /// there and two here, so a limit checked with `count` lets through what the database refuses.
    var storedLength: Int { unicodeScalars.count }
}
