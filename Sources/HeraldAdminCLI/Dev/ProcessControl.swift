import AsyncHTTPClient
import Foundation
import HeraldCLI
import Synchronization

/// Starting, watching and stopping the stack's processes.
enum ProcessControl {
    /// Starts `managed` in a session of its own (so it outlives this command and a terminal's
    /// Ctrl-C stays with the shell), output appended to its log. Returns it with its pid.
    static func spawn(_ managed: DevStack.Managed) throws -> DevStack.Managed {
        var started = managed
        started.pid = try launch(
            managed.executable, managed.arguments, environment: managed.environment,
            output: managed.log, append: true, newSession: true)
        return started
    }

    /// posix_spawn with standard input from /dev/null and standard output and error to `output`.
    /// (Foundation's Process is not used: its wait can hang inside Swift concurrency on Linux.)
    static func launch(
        _ executable: String, _ arguments: [String], environment: [String: String]?,
        output: String, append: Bool, newSession: Bool
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if newSession {
            // A session of its own: the process outlives this command, and a terminal's Ctrl-C
            // stays with the shell.
            posix_spawnattr_setflags(&attributes, 0x80)  // POSIX_SPAWN_SETSID (glibc 2.26+; not imported into Swift)
        }
        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for argument in argv { free(argument) }
            for variable in envp { free(variable) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw CLIError("cannot start \(executable): \(String(cString: strerror(result)))")
        }
        return pid
    }

    static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0, kill(pid, 0) == 0 else { return false }
        // A child that exited but was not reaped yet is a zombie: not alive.
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.first == "Z" { return false }
        }
        return true
    }

    /// Waits until `managed` is ready; fails with the end of its log if it exits or takes too long.
    static func awaitReady(_ managed: DevStack.Managed, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard isAlive(managed.pid) else {
                throw CLIError(
                    "\(managed.name) exited while starting; the end of \(managed.log):\n" + tail(managed.log))
            }
            if await isReady(managed.readiness) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw CLIError(
            "\(managed.name) was not ready within \(timeout); the end of \(managed.log):\n" + tail(managed.log))
    }

    static func isReady(_ readiness: String) async -> Bool {
        if readiness.hasPrefix("file:") {
            let path = String(readiness.dropFirst(5))
            return (FileManager.default.contents(atPath: path)?.count ?? 0) > 0
        }
        if readiness.hasPrefix("http:") {
            var request = HTTPClientRequest(url: String(readiness.dropFirst(5)))
            request.method = .GET
            guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(2)) else {
                return false
            }
            _ = try? await response.body.collect(upTo: 1 << 20)
            return response.status.code == 200
        }
        if readiness.hasPrefix("tcp:"), let port = Int(readiness.split(separator: ":").last ?? "") {
            return !isPortFree(port)  // something listens on 127.0.0.1:port
        }
        return true
    }

    /// SIGTERM, then SIGKILL after `grace`; returns once the process is gone.
    static func stop(_ pid: Int32, grace: Duration = .seconds(15)) async {
        guard isAlive(pid) else { return }
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + grace
        while isAlive(pid), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        await killNow(pid)
    }

    /// SIGKILL (no chance to finish anything); returns once the process is gone.
    static func killNow(_ pid: Int32) async {
        guard isAlive(pid) else { return }
        kill(pid, SIGKILL)
        while isAlive(pid) { try? await Task.sleep(for: .milliseconds(20)) }
    }

    /// Runs a command to its end; throws with its output when it fails.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> String
    {
        let outputPath = NSTemporaryDirectory() + "herald-run-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let pid = try launch(
            executable, arguments, environment: environment, output: outputPath, append: false, newSession: false)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exited = status & 0x7F == 0
        let code = (status >> 8) & 0xFF
        guard exited && code == 0 else {
            throw CLIError("\(([executable] + arguments).joined(separator: " ")) failed (status \(status)):\n\(text)")
        }
        return text
    }

    /// The last lines of a log, indented.
    static func tail(_ path: String, lines: Int = 20) -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "  (no log)" }
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).map { "  " + $0 }.joined(
            separator: "\n")
    }

    /// A TCP port on 127.0.0.1 that is free now, for one of the stack's servers to listen on.
    ///
    /// Taken below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`, 32768–60999 by
    /// default), from which outgoing connections take their source ports: a port picked there
    /// (as binding port 0 does) could be taken by one of the stack's own client connections
    /// before its server binds it — which once stopped CI's scale-out stack ("apns-sim: cannot
    /// listen … Address already in use"). Never the same port twice in one command. When the
    /// ephemeral range leaves too little room below it, the kernel's choice.
    static func freePort() throws -> Int {
        let ceiling = min(ephemeralRangeStart(), 65_536)
        let floor = 10_000
        if ceiling - floor >= 1_000 {
            for _ in 0..<500 {
                let port = Int.random(in: floor..<ceiling)
                if handedOut.withLock({ $0.insert(port).inserted }), isPortFree(port) { return port }
            }
        }
        guard let port = bindLoopback(port: 0) else { throw CLIError("cannot bind a socket to find a free port") }
        return port
    }

    /// Ports ``freePort()`` gave in this process.
    private static let handedOut = Mutex<Set<Int>>([])

    /// The first port of the kernel's ephemeral range (32768 when it cannot be read).
    private static func ephemeralRangeStart() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8),
            let first = text.split(whereSeparator: \.isWhitespace).first.flatMap({ Int($0) })
        else { return 32_768 }
        return first
    }

    static func isPortFree(_ port: Int) -> Bool {
        bindLoopback(port: port) != nil
    }

    /// Binds a socket to 127.0.0.1:`port` and closes it again; the port it got, or nil.
    private static func bindLoopback(port: Int) -> Int? {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return nil }
        defer { close(socketFD) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketFD, $0, length) == 0 && getsockname(socketFD, $0, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }
}
