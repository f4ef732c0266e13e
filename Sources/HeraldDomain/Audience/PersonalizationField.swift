import HeraldAPNsVocabulary

/// A device value a notification template may name in a placeholder (docs/templates.md): one of
/// the attributes every device may have, or a custom attribute (`first_name` or
/// `attributes.first_name`). The fan-out reads each as one text column beside the device.
public enum PersonalizationField: Sendable, Hashable {
    case alias, locale, language, country
    case timeZone
    case appVersion, osVersion
    /// What the app reported of its notification settings: read by the fan-out of a push with
    /// `options.skip_unauthorized`, not a placeholder a template may name.
    case authorizationStatus
    case custom(String)

    /// The field `name` stands for, or nil when it names none: a built-in attribute, else a
    /// custom attribute's name (`attributes.` before it is optional; custom attributes that share
    /// a built-in's name need it).
    public init?(name: String) {
        switch name {
        case "alias": self = .alias
        case "locale": self = .locale
        case "language": self = .language
        case "country": self = .country
        case "time_zone": self = .timeZone
        case "app_version": self = .appVersion
        case "os_version": self = .osVersion
        default:
            let custom = name.hasPrefix("attributes.") ? String(name.dropFirst("attributes.".count)) : name
            guard DeviceAttributes.isValidName(custom) else { return nil }
            self = .custom(custom)
        }
    }

    /// The built-in names, for error messages and docs.
    public static let builtInNames = [
        "alias", "locale", "language", "country", "time_zone", "app_version", "os_version",
    ]

    /// The attribute an audience filter names for this field (`exists` on it guarantees a value).
    public var filterAttribute: AudienceFilter.Attribute {
        switch self {
        case .alias: .text(.alias)
        case .locale: .text(.locale)
        case .language: .text(.language)
        case .country: .text(.country)
        case .timeZone: .text(.timeZone)
        case .appVersion: .version(.appVersion)
        case .osVersion: .version(.osVersion)
        case .authorizationStatus: .text(.authorizationStatus)
        case .custom(let name): .custom(name)
        }
    }
}

extension PayloadTemplate {
    /// The columns a fan-out reads for this template: the locale first when the push has
    /// variants, then each placeholder's field in ``PayloadTemplate/names`` order.
    /// - Throws: ``UnknownPlaceholder`` for a name that is no field.
    public func personalization() throws(UnknownPlaceholder) -> [PersonalizationField] {
        var fields: [PersonalizationField] = isLocalized ? [.locale] : []
        for name in names {
            guard let field = PersonalizationField(name: name) else { throw UnknownPlaceholder(name: name) }
            fields.append(field)
        }
        return fields
    }
}

/// A placeholder names no device value.
public struct UnknownPlaceholder: Error, Sendable, Hashable, CustomStringConvertible {
    public var name: String

    public init(name: String) { self.name = name }

    public var description: String {
        "{{\(name)}} names no device value: use \(PersonalizationField.builtInNames.joined(separator: ", ")), or a custom attribute (first_name or attributes.first_name)"
    }
}
