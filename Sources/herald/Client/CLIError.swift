/// An error the CLI reports as one line that says what happened and what to do.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
