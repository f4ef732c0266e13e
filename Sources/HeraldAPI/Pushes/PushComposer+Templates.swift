import Foundation
import HeraldAPIContract
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldStore

/// Personalized and localized notifications (docs/templates.md): placeholders in the alert's
/// texts and texts per language, checked when the push (or a stored template) is accepted and
/// compiled into the ``PayloadTemplate`` the fan-out renders per device.
extension PushComposer {
    /// A notification's template, checked.
    struct Personalization {
        /// What the push stores (``PayloadTemplate/storedJSON(default:localized:)``).
        var stored: [UInt8]
        /// The default variant with each placeholder's default: the push's plain payload.
        var defaultPayload: [UInt8]
        /// The largest variant with defaults, in bytes.
        var largestPayload: Int
        /// Names the placeholders use, in order of first use.
        var names: [String]
        /// Placeholders without a default: the audience must guarantee their values.
        var withoutDefault: [(name: String, field: String)]
        /// Normalized languages and locales with texts of their own.
        var localizations: [String]
    }

    /// The most variants per language or locale a notification has.
    static let maximumLocalizations = 50

    /// The notification's template, or nil when it has neither placeholders nor localizations
    /// (its payload is sent as it is).
    /// - Throws: 422 naming the text with a broken or unknown placeholder, or a bad locale; 413
    ///   naming the variant whose payload (with defaults) is over `pushType`'s limit.
    static func personalization(
        _ notification: Components.Schemas.Notification, payload: APNsPayload, pushType: APNsPushType
    ) throws(APIError) -> Personalization? {
        let localizations = notification.localizations?.additionalProperties ?? [:]
        var texts: [(field: String, text: String)] = []
        if let alert = notification.alert {
            for (name, value) in [("title", alert.title), ("subtitle", alert.subtitle), ("body", alert.body)] {
                if let value { texts.append(("notification.alert.\(name)", value)) }
            }
            for (name, list) in [
                ("title_loc_args", alert.titleLocArgs), ("subtitle_loc_args", alert.subtitleLocArgs),
                ("loc_args", alert.locArgs),
            ] {
                for (index, value) in (list ?? []).enumerated() {
                    texts.append(("notification.alert.\(name)[\(index)]", value))
                }
            }
        }
        for (locale, localized) in localizations.sorted(by: { $0.key < $1.key }) {
            for (name, value) in [
                ("title", localized.title), ("subtitle", localized.subtitle), ("body", localized.body),
            ] {
                if let value { texts.append(("notification.localizations.\(locale).\(name)", value)) }
            }
        }
        guard !localizations.isEmpty || texts.contains(where: { TemplateText.mayHold($0.text) }) else { return nil }

        var withoutDefault: [(name: String, field: String)] = []
        for (field, text) in texts where TemplateText.mayHold(text) {
            let template: TemplateText
            do {
                template = try TemplateText(parsing: text)
            } catch {
                throw .invalid(field, error.description)
            }
            for placeholder in template.placeholders {
                guard PersonalizationField(name: placeholder.name) != nil else {
                    throw .invalid(field, UnknownPlaceholder(name: placeholder.name).description)
                }
                if placeholder.defaultValue == nil, !withoutDefault.contains(where: { $0.name == placeholder.name }) {
                    withoutDefault.append((placeholder.name, field))
                }
            }
        }

        // Variants: the default, then one per locale (its texts over the alert's).
        guard localizations.count <= maximumLocalizations else {
            throw .invalid("notification.localizations", "at most \(maximumLocalizations) languages and locales")
        }
        if !localizations.isEmpty, notification.alert?.title == nil, notification.alert?.body == nil {
            throw .invalid(
                "notification.alert",
                "localizations need an alert with a title or body: devices of other languages get it")
        }
        var variants: [(locale: String, payload: [UInt8])] = []
        for (locale, localized) in localizations.sorted(by: { $0.key < $1.key }) {
            guard isLocale(locale) else {
                throw .invalid(
                    "notification.localizations.\(locale)",
                    "name a language (de) or a locale (pt-BR, zh-Hant-TW): letters, digits, - or _")
            }
            let normalized = PayloadTemplate.normalizedLocale(locale)
            guard !variants.contains(where: { $0.locale == normalized }) else {
                throw .invalid(
                    "notification.localizations.\(locale)", "\(normalized) is given twice (case and _ do not count)")
            }
            var variant = payload
            if case .details(var details)? = payload.alert {
                // A locale's texts over its language's (de-AT over de), over the alert's.
                let language = normalized.split(separator: "-").first.map(String.init) ?? normalized
                let byLanguage = localizations.first {
                    language != normalized && PayloadTemplate.normalizedLocale($0.key) == language
                }?.value
                for texts in [byLanguage, localized].compactMap({ $0 }) {
                    details.title = texts.title ?? details.title
                    details.subtitle = texts.subtitle ?? details.subtitle
                    details.body = texts.body ?? details.body
                }
                variant.alert = .details(details)
            }
            variants.append((normalized, variant.encoded()))
        }
        let stored = PayloadTemplate.storedJSON(default: payload.encoded(), localized: variants)
        let compiled: PayloadTemplate
        do {
            compiled = try PayloadTemplate(stored: stored)
        } catch {
            throw .invalid("notification", "the notification cannot be compiled as a template: \(error)")
        }
        let rendered = compiled.renderedWithDefaults()
        let limit = pushType.maximumPayloadBytes
        let reserved = HeraldPayloadKey.reservedBytes
        for (index, bytes) in rendered.enumerated() where bytes.count + reserved > limit {
            throw APIError(
                .contentTooLarge, code: .payloadTooLarge,
                message:
                    "\(index == 0 ? "the default variant" : "the \(compiled.locales[index - 1]) variant") with each placeholder's default: \(Self.tooLarge(bytes.count + reserved, for: pushType))",
                field: index == 0 ? "notification" : "notification.localizations.\(compiled.locales[index - 1])")
        }
        return Personalization(
            stored: stored, defaultPayload: rendered[0], largestPayload: (rendered.map(\.count).max() ?? 0) + reserved,
            names: compiled.names, withoutDefault: withoutDefault, localizations: compiled.locales)
    }

    /// `de`, `pt-BR`, `zh_Hant_TW`: a language of 2 or 3 letters, then subtags of 1 to 8 letters or digits.
    static func isLocale(_ text: String) -> Bool {
        let parts = text.split(separator: /[-_]/, omittingEmptySubsequences: false)
        guard text.utf8.count <= 35, let language = parts.first, (2...3).contains(language.count),
            language.allSatisfy({ $0.isASCII && $0.isLetter })
        else { return false }
        return parts.dropFirst().allSatisfy { part in
            (1...8).contains(part.count) && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
    }

    /// Refuses a placeholder without a default unless every device of `audience` has the value:
    /// its filter requires it (`exists`, `eq` or `in` on the attribute, alone or in an `and`), or —
    /// for `{{alias}}` — the audience is a list of aliases.
    static func requireValues(of personalization: Personalization?, in audience: PushAudience) throws(APIError) {
        for (name, field) in personalization?.withoutDefault ?? [] {
            guard let wanted = PersonalizationField(name: name) else { continue }
            if wanted == .alias, audience.aliases != nil, audience.registrationIDs == nil { continue }
            if let filter = audience.filter, guarantees(filter, wanted) { continue }
            throw .invalid(
                field,
                "{{\(name)}} has no default, and the audience may hold devices without \(name): add | default: \"…\", or filter the audience on {\"attribute\": \"\(wanted.filterAttribute.name)\", \"op\": \"exists\"}"
            )
        }
    }

    private static func guarantees(_ filter: AudienceFilter, _ field: PersonalizationField) -> Bool {
        switch filter {
        case .and(let filters): return filters.contains { guarantees($0, field) }
        case .or(let filters): return !filters.isEmpty && filters.allSatisfy { guarantees($0, field) }
        case .not: return false
        case .condition(let condition):
            guard [.exists, .eq, .in].contains(condition.op) else { return false }
            if condition.attribute == field.filterAttribute { return true }
            // A device with a locale has a language.
            return field == .language && condition.attribute == .text(.locale)
        }
    }
}
