/// An error the CLI reports as one line that says what happened and what to do, and the exit
/// status it ends the process with.
package struct CLIError: Error, CustomStringConvertible {
    package let description: String
    package var status: ExitStatus = .failure

    package init(_ description: String, status: ExitStatus = .failure) {
        self.description = description
        self.status = status
    }
}

/// How `herald` ends, for scripts (docs/cli.md lists them).
public enum ExitStatus: Int32, Sendable, CaseIterable {
    /// It did what was asked.
    case success = 0
    /// It ran, and the answer is no: herald-api refused the request (4xx other than the two
    /// below), a push does not add up, a check failed.
    case failure = 1
    /// The command line is wrong: an unknown flag, a missing or malformed argument.
    case usage = 2
    /// herald-api could not be reached, or answered that it cannot work now (503: its
    /// database is away): try again later.
    case unavailable = 3
    /// The key or token was refused (401) or may not do this (403).
    case notAllowed = 4
}
