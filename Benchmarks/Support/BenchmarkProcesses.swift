import Foundation

/// What Herald's benchmark programs share: running h2load, starting and stopping servers.
public enum BenchmarkProcesses {
    /// A benchmark could not run as asked; says what to fix.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// Runs h2load (Debian's nghttp2-client) and returns its requests per second.
    /// - Parameters:
    ///   - requests: total requests; every one must get a 2xx, or this throws.
    ///   - headers: `-H` values (`name: value`).
    ///   - bodyFile: a file sent as each request's body (`-d`: the requests are POSTs).
    public static func h2load(
        requests: Int, connections: Int, streams: Int, headers: [String], bodyFile: String?, url: String
    ) throws -> Double {
        try h2loadRun(
            requests: requests, connections: connections, streams: streams, headers: headers, bodyFile: bodyFile,
            url: url
        ).rate
    }

    /// What an h2load run measured: requests per second and the CPU h2load itself used per request
    /// (user and system, from the kernel's account of the exited child), the client-side cost a
    /// sender is compared with.
    public struct H2LoadRun: Sendable {
        public var rate: Double
        public var cpuMicrosecondsPerRequest: Double

        public init(rate: Double, cpuMicrosecondsPerRequest: Double) {
            self.rate = rate
            self.cpuMicrosecondsPerRequest = cpuMicrosecondsPerRequest
        }
    }

    /// Runs h2load as ``h2load(requests:connections:streams:headers:bodyFile:url:)`` does, and
    /// measures its CPU: the calling process must have no other child exiting meanwhile.
    public static func h2loadRun(
        requests: Int, connections: Int, streams: Int, headers: [String], bodyFile: String?, url: String
    ) throws -> H2LoadRun {
        let before = childrenCPUSeconds()
        guard let path = which("h2load") else {
            throw Failure("h2load is missing: install Debian's nghttp2-client (scripts/install-dependencies.sh)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        var arguments = ["-n", "\(requests)", "-c", "\(connections)", "-m", "\(streams)"]
        for header in headers { arguments += ["-H", header] }
        if let bodyFile { arguments += ["-d", bodyFile] }
        process.arguments = arguments + [url]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard output.contains("status codes: \(requests) 2xx"),
            let line = output.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
            let rate = line.split(separator: ",").dropFirst().first?.split(separator: " ").first.flatMap({ Double($0) })
        else { throw Failure("h2load against \(url) did not get \(requests) 2xx answers:\n\(output)") }
        let cpu = childrenCPUSeconds() - before
        return H2LoadRun(rate: rate, cpuMicrosecondsPerRequest: cpu / Double(requests) * 1e6)
    }

    /// User and system CPU seconds of every child this process has waited for.
    private static func childrenCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// User and system CPU seconds of a running process (0 when it is gone).
    public static func cpuSeconds(of pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command name: state is field 3; utime and stime are fields 14 and 15.
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// What `path` with `arguments` writes to its standard output, once it has exited.
    public static func output(_ path: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Starts `path` with `arguments`; its output goes to `log` (or nowhere).
    public static func launch(
        _ path: String, _ arguments: [String], log: String? = nil, environment: [String: String]? = nil
    ) throws -> Process {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failure(
                "no \(path): build it with `swift build -c release --product \((path as NSString).lastPathComponent)`")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let log {
            FileManager.default.createFile(atPath: log, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            process.standardOutput = handle
            process.standardError = handle
        } else {
            process.standardOutput = FileHandle.nullDevice
        }
        try process.run()
        return process
    }

    /// SIGTERM, then SIGKILL if the process is still there after `grace` (nghttpd does not always
    /// exit on SIGTERM while connections linger); reaps it either way.
    public static func stop(_ process: Process, grace: Duration = .seconds(5)) {
        let pid = process.processIdentifier
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + grace
        while ContinuousClock.now < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(50_000)
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    public static func isListening(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// The full path of `tool` on PATH (or in /usr/sbin, where nghttpd lives).
    public static func which(_ tool: String) -> String? {
        var folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":").map(String.init)
        folders.append("/usr/sbin")
        return folders.map { "\($0)/\(tool)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The median of `values` (0 if empty).
    public static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}
