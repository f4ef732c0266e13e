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
        library.render(lookupTree(page), withTemplate: name) ?? ""
    }

    /// `value` with every console page struct in it (a type of this module) turned into a
    /// dictionary of its stored properties, nil ones left out, and arrays of them converted element
    /// by element; any other value as it is.
    ///
    /// Mustache finds a name in a struct through `Mirror`, which reflects every property of the
    /// struct again for each name it looks up, and again at each level of the context stack it
    /// climbs (a row's template looking up the page's `chrome` reflects the row first). A page of 50
    /// devices spent ~17 ms there (28 ms against 11.5 ms for the same page without the rows,
    /// measured on herald-api's release build); a dictionary answers a name at once. Leaving nil
    /// properties out keeps Mustache's rules for an optional: a nil value, like a missing one, is
    /// looked up further up the stack and is false in a section.
    /// - Parameter pageModule: the module whose structs are pages (tests name their own).
    static func lookupTree(_ value: Any, pageModule: String = "HeraldConsole") -> Any {
        var pageTypes = PageTypes(prefix: pageModule + ".")
        return lookupTree(value, pageTypes: &pageTypes)
    }

    private static func lookupTree(_ value: Any, pageTypes: inout PageTypes) -> Any {
        if let array = value as? [Any] {
            // Only an array of page structs: any other keeps its element type (Mustache's
            // transforms such as `sorted` need comparable elements).
            guard let first = array.first, pageTypes.isPageStruct(first) else { return value }
            return array.map { lookupTree($0, pageTypes: &pageTypes) }
        }
        guard pageTypes.isPageStruct(value) else { return value }
        let mirror = Mirror(reflecting: value)
        var fields: [String: Any] = [:]
        for child in mirror.children {
            guard let label = child.label else { continue }
            let present: Any
            if let optional = child.value as? any OptionalValue {
                guard let wrapped = optional.wrapped else { continue }
                present = wrapped
            } else {
                present = child.value
            }
            fields[label] = lookupTree(present, pageTypes: &pageTypes)
        }
        return fields
    }

    /// The console's own page structs (HeraldConsole's), which hold only what templates read.
    /// Foundation's structs (a `Date`, a `URL`) render by their description, so they are left
    /// alone, as are enums and classes. Each type is looked at once a render.
    private struct PageTypes {
        var prefix: String
        var known: [ObjectIdentifier: Bool] = [:]

        mutating func isPageStruct(_ value: Any) -> Bool {
            let type = type(of: value)
            if let answer = known[ObjectIdentifier(type)] { return answer }
            let answer =
                String(reflecting: type).hasPrefix(prefix) && Mirror(reflecting: value).displayStyle == .struct
            known[ObjectIdentifier(type)] = answer
            return answer
        }
    }
}

/// An optional seen as `Any`: what it holds, if anything.
private protocol OptionalValue {
    var wrapped: Any? { get }
}

extension Optional: OptionalValue {
    /// One level, as Mirror unwraps it for Mustache.
    fileprivate var wrapped: Any? { self.map { $0 } }
}
