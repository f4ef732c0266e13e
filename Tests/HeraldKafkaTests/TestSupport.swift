import Foundation
import HeraldCore
import Testing

/// Runs Herald's executables as separate processes, as operators and tests see them.
enum HeraldProcesses {
    /// The folder holding the built executables: `HERALD_BIN_DIR` (set by `make test`), else the
    /// folder of the test bundle, which SwiftPM shares with them.
    static var binaryDirectory: URL {
        if let directory = ProcessInfo.processInfo.environment["HERALD_BIN_DIR"] {
            return URL(fileURLWithPath: directory)
        }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.pathComponents.count > 1
            && !FileManager.default.fileExists(atPath: url.appendingPathComponent("herald").path)
        {
            url.deleteLastPathComponent()
        }
        return url
    }

    /// Starts `herald` with `arguments`, standard error to `log`.
    static func start(_ arguments: [String], log: URL) throws -> Process {
        let process = Process()
        process.executableURL = binaryDirectory.appendingPathComponent("herald")
        process.arguments = arguments
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardError = handle
        process.standardOutput = handle
        try process.run()
        return process
    }

    /// Runs `herald` to completion and returns its exit status.
    static func run(_ arguments: [String], log: URL) async throws -> Int32 {
        let process = try start(arguments, log: log)
        return await waitForExit(process)
    }

    /// Waits for `process` to exit without blocking a thread of the cooperative pool
    /// (`Process.waitUntilExit()` would) and returns its status; -1 if it is still running
    /// after `timeout`.
    static func waitForExit(_ process: Process, timeout: Duration = .seconds(300)) async -> Int32 {
        let exited = await eventually(timeout: timeout) { !process.isRunning }
        return exited ? process.terminationStatus : -1
    }
}

/// The numbers N of the lines `PREFIX:N` in a consumer's log (`U ` marks records handled
/// without storing their offset; `includeUnstored` decides whether they count).
func handledNumbers(_ url: URL, prefix: String = "r:", includeUnstored: Bool = true, onlyUnstored: Bool = false)
    -> [Int]
{
    guard let data = FileManager.default.contents(atPath: url.path) else { return [] }
    var numbers: [Int] = []
    numbers.reserveCapacity(data.count / 8)
    let prefixBytes = Array(prefix.utf8)
    data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
        let bytes = raw.bindMemory(to: UInt8.self)
        var lineStart = 0
        for index in 0...bytes.count {
            guard index == bytes.count || bytes[index] == UInt8(ascii: "\n") else { continue }
            var position = lineStart
            lineStart = index + 1
            var unstored = false
            if index - position >= 2 && bytes[position] == UInt8(ascii: "U") && bytes[position + 1] == UInt8(ascii: " ")
            {
                unstored = true
                position += 2
            }
            if (unstored && !includeUnstored) || (onlyUnstored && !unstored) { continue }
            guard index - position > prefixBytes.count else { continue }
            var matches = true
            for (offset, byte) in prefixBytes.enumerated() where bytes[position + offset] != byte {
                matches = false
                break
            }
            guard matches else { continue }
            var value = 0
            var digits = 0
            for digitIndex in (position + prefixBytes.count)..<index {
                let byte = bytes[digitIndex]
                guard byte >= 48 && byte <= 57 else {
                    digits = 0
                    break
                }
                value = value * 10 + Int(byte - 48)
                digits += 1
            }
            if digits > 0 { numbers.append(value) }
        }
    }
    return numbers
}

/// A folder for one test's files.
func makeScratchDirectory(_ name: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
        "herald-tests-\(name)-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Polls `condition` every 250 ms until it holds or `timeout` passes. Returns whether it held.
/// (A bound on how long to wait for something to happen, not a measurement.)
func eventually(timeout: Duration, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(250))
    }
    return try condition()
}

/// Herald's configuration as `make test` exported it.
func configurationFromEnvironment() async throws -> HeraldConfiguration {
    try await HeraldConfiguration.load()
}
