import Foundation
import HeraldAPNsVocabulary
import Testing

/// Placeholders and localized variants: how a text is read, which variant a device gets, and
/// that a rendered payload is valid JSON with the device's values escaped.
@Suite struct PayloadTemplateTests {
    @Test func placeholdersAreReadWithTheirDefaults() throws {
        let text = try TemplateText(parsing: #"Hi {{ first_name | default: "dear \"friend\"" }}, from {{country}}!"#)
        #expect(
            text.parts == [
                .literal("Hi "), .placeholder(.init(name: "first_name", defaultValue: #"dear "friend""#)),
                .literal(", from "), .placeholder(.init(name: "country")), .literal("!"),
            ])
        #expect(try TemplateText(parsing: "no placeholder { here }").parts == [.literal("no placeholder { here }")])
        #expect(try TemplateText(parsing: "{{attributes.plan}}").placeholders == [.init(name: "attributes.plan")])
    }

    @Test func onlyTextsWithTwoOpeningBracesMayHoldPlaceholders() {
        for text in ["{{name}}", "Hi {{", "a {{{ b", "é{{x"] { #expect(TemplateText.mayHold(text), "\(text)") }
        for text in ["", "{", "{ {", "}}{", "a { b } c", "{é{"] { #expect(!TemplateText.mayHold(text), "\(text)") }
    }

    @Test func brokenPlaceholdersAreRefusedWithWhere() {
        for (text, offset) in [
            ("Hi {{first_name", 3), ("{{ }}", 0), ("x {{First}}", 2), ("{{name | upper}}", 0),
            (#"{{name | default: "open}}"#, 0), ("{{a.b.c}}", 0), ("{{name | default: there}}", 0),
        ] {
            #expect(throws: TemplateSyntaxError.self, "\(text)") { try TemplateText(parsing: text) }
            do {
                _ = try TemplateText(parsing: text)
            } catch {
                #expect(error.offset == offset, "\(text): \(error)")
                #expect(error.description.contains("{{name}}"))
            }
        }
    }

    func template() throws -> PayloadTemplate {
        var base = APNsPayload(
            alert: .details(.init(title: "Hi {{first_name | default: \"there\"}}", body: "Your plan: {{plan}}")))
        base.custom["link"] = "https://example.com/{{first_name}}"  // not in the alert: sent as written
        var german = base
        german.alert = .details(.init(title: "Hallo {{first_name | default: \"du\"}}", body: "Dein Tarif: {{plan}}"))
        var austrian = base
        austrian.alert = .details(.init(title: "Servus {{first_name}}", body: "{{plan}}"))
        let stored = PayloadTemplate.storedJSON(
            default: base.encoded(), localized: [("de", german.encoded()), ("de-at", austrian.encoded())])
        return try PayloadTemplate(stored: stored)
    }

    @Test func eachDeviceGetsItsLocaleThenItsLanguageThenTheDefault() throws {
        let template = try template()
        #expect(template.locales == ["de", "de-at"])
        #expect(template.names.sorted() == ["first_name", "plan"])
        for (locale, variant) in [
            ("de_AT", 2), ("DE-at", 2), ("de", 1), ("de-CH", 1), ("de_DE", 1), ("fr-FR", 0), ("", 0), ("d", 0),
        ] {
            #expect(template.variant(forLocale: Array(locale.utf8)) == variant, "\(locale)")
        }
    }

    @Test func rendersAreValidJSONWithValuesEscapedAndDefaultsForMissingValues() throws {
        let template = try template()
        let values = ["first_name": "Zoë \"Z\" \\ \n", "plan": "gold"]
        let rendered = template.render(variant: 0) { values[template.names[$0]].map { Array($0.utf8)[...] } }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(rendered)) as? [String: Any])
        let alert = try #require((object["aps"] as? [String: Any])?["alert"] as? [String: String])
        #expect(alert["title"] == "Hi Zoë \"Z\" \\ \n")
        #expect(alert["body"] == "Your plan: gold")
        #expect(object["link"] as? String == "https://example.com/{{first_name}}")

        let german = template.render(variant: 1) { template.names[$0] == "first_name" ? ArraySlice() : nil }
        let germanAlert = try #require(
            ((try JSONSerialization.jsonObject(with: Data(german)) as? [String: Any])?["aps"] as? [String: Any])?[
                "alert"] as? [String: String])
        // An empty value counts as none; a placeholder without a default then renders as nothing.
        #expect(germanAlert == ["title": "Hallo du", "body": "Dein Tarif: "])
        #expect(template.renderedWithDefaults().count == 3)
    }

    @Test(
        "the bound of a render holds for values of every kind and length, in every variant, and is close for plain text"
    )
    func renderBoundHolds() throws {
        // The fixture, and one whose localized variant repeats a placeholder and has the longer default.
        var base = APNsPayload(alert: .details(.init(title: "{{first_name | default: \"x\"}}", body: "{{plan}}")))
        base.sound = .named("default")
        var french = base
        french.alert = .details(
            .init(
                title:
                    "{{first_name}} {{first_name}} {{first_name | default: \"une valeur par défaut bien plus longue\"}}",
                body: ""))
        let repeated = try PayloadTemplate(
            stored: PayloadTemplate.storedJSON(default: base.encoded(), localized: [("fr", french.encoded())]))
        for template in [try template(), repeated] {
            try Self.checkBound(template)
        }
        // Close for short plain values: a few bytes over per slot, not a payload limit.
        let template = try template()
        let plain = [Array("Anna".utf8), Array("gold".utf8)]
        let longest = (0...template.locales.count).map { variant in
            template.render(variant: variant) { plain[$0][...] }.count
        }.max()!
        #expect(template.maximumRenderedCount { plain[$0].count } < longest + 6 * 8 + 32)
    }

    static func checkBound(_ template: PayloadTemplate) throws {
        var generator = SystemRandomNumberGenerator()
        // Quotes, backslashes, control characters (escaped to six bytes), multi-byte UTF-8, plain.
        let alphabet: [[UInt8]] = [[0x22], [0x5C], [0x0A], [0x01], [0x1F], Array("ë".utf8), Array("😀".utf8), [0x61]]
        for _ in 0..<500 {
            let values: [[UInt8]] = template.names.map { _ in
                (0..<Int.random(in: 0...40, using: &generator)).flatMap { _ in
                    alphabet.randomElement(using: &generator)!
                }
            }
            let bound = template.maximumRenderedCount { values[$0].count }
            for variant in 0...template.locales.count {
                let rendered = template.render(variant: variant) { values[$0][...] }
                #expect(rendered.count <= bound, "variant \(variant), values \(values)")
            }
        }
    }

    @Test func onlyAlertTextsAreTemplates() throws {
        var payload = APNsPayload(alert: .text("{{alias | default: \"you\"}}"))
        payload.sound = .named("{{not_a_placeholder")
        payload.custom["data"] = ["{{broken": "{{"]
        let template = try PayloadTemplate(
            stored: PayloadTemplate.storedJSON(default: payload.encoded(), localized: []))
        #expect(template.names == ["alias"])
        let rendered = String(decoding: template.render(variant: 0) { _ in Array("ann".utf8)[...] }, as: UTF8.self)
        #expect(rendered.contains(#""alert":"ann""#) && rendered.contains(#""sound":"{{not_a_placeholder""#))
        // A broken placeholder in the alert is an error, never sent as written.
        let broken = APNsPayload(alert: .details(.init(body: "Hi {{name")))
        #expect(throws: TemplateSyntaxError.self) {
            try PayloadTemplate(stored: PayloadTemplate.storedJSON(default: broken.encoded(), localized: []))
        }
    }
}
