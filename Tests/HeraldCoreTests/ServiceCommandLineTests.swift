import Testing

@testable import HeraldCore

@Suite("service executables answer --help and --version without starting, and refuse arguments")
struct ServiceCommandLineTests {
    @Test("no arguments start the service")
    func noArguments() {
        #expect(ServiceProcess.answer([], executable: "herald-api", about: "the Open API.") == .start)
    }

    @Test("--help and -h print what it is, its version and where the settings are")
    func help() throws {
        for flag in ["--help", "-h", "help"] {
            guard case .print(let text) = ServiceProcess.answer([flag], executable: "herald-center", about: "fans out.")
            else {
                Issue.record("\(flag) did not print help")
                continue
            }
            #expect(text.hasPrefix("herald-center \(HeraldVersion.current): fans out."))
            #expect(text.contains("docs/configuration.md"))
            #expect(text.contains("Usage: herald-center [--help | --version]"))
        }
    }

    @Test("--version prints the version alone")
    func version() {
        #expect(
            ServiceProcess.answer(["--version"], executable: "herald-sender", about: "sends.")
                == .print("herald-sender \(HeraldVersion.current)"))
    }

    @Test("any other argument is refused with where settings come from")
    func refused() {
        guard case .refuse(let text) = ServiceProcess.answer(["--port", "80"], executable: "herald-api", about: "")
        else {
            Issue.record("an argument was not refused")
            return
        }
        #expect(text.contains("takes no arguments (got --port)"))
        #expect(text.contains("HERALD_") || text.contains("environment"))
    }
}
