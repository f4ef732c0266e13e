import Mustache

/// The console's Mustache templates, parsed once at start. They live in Swift source (the
/// `Templates+*.swift` files) so that herald-api needs no resource folder beside it.
enum ConsoleTemplates {
    /// Every template by name; a page renders with ``render(_:_:)``.
    static let library: MustacheLibrary = {
        var library = MustacheLibrary()
        let templates: [(String, String)] = [
            ("logo", logo), ("layout", layout), ("signIn", signIn), ("message", message), ("confirm", confirm),
            ("pushes", pushes), ("push", push), ("compose", compose), ("apps", apps), ("app", app),
            ("secrets", secrets), ("devices", devices), ("stats", stats),
            ("schedules", schedules), ("schedule", schedule),
        ]
        for (name, text) in templates {
            // The templates are part of the program: one that does not parse is a bug found by
            // the first test that renders it.
            do { try library.register(text, named: name) } catch { fatalError("console template \(name): \(error)") }
        }
        return library
    }()

    /// The HTML of template `name` for `page`.
    static func render(_ name: String, _ page: Any) -> String {
        library.render(page, withTemplate: name) ?? ""
    }
}
