import HeraldDomain

extension PersonalizationField {
    /// The column's SQL over `devices d` (text, NULL when the device has no value).
    func sql(values: inout some AudienceQueryValues) -> String {
        switch self {
        case .alias: "d.alias"
        case .locale: "d.locale"
        case .language: AudienceRepository.languageSQL
        case .country: "d.country"
        case .timeZone: "d.time_zone"
        case .appVersion: "d.app_version"
        case .osVersion: "d.os_version"
        case .authorizationStatus: "d.authorization_status"
        case .custom(let name): "d.attributes ->> \(values.once(values.value(name)))"
        }
    }
}
