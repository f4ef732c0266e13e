import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What every Herald process reports about itself on `/metrics`, in the names Prometheus's own
/// client libraries use (so dashboards made for them work): CPU, resident memory, open and
/// allowed file descriptors, start time; and `herald_build_info`.
public enum ProcessMetrics {
    /// When this process started (the first use of this type, at the operations server's start).
    static let startTime = Date().timeIntervalSince1970

    /// The families, in Prometheus text. Reads `/proc/self` (Linux); where it cannot, a family
    /// is left out rather than reported as 0.
    public static func prometheusText(service: String, version: String) -> String {
        var text = PrometheusText()
        text.family("herald_build_info", .gauge, help: "1, labelled with the running build.")
        text.sample(
            "herald_build_info", ["service": service, "version": version, "swift": swiftVersion],
            value: 1)
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")"), ticks > 0
        {
            // Fields after the command name; utime and stime are the 14th and 15th of the line.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) {
                text.single(
                    "process_cpu_seconds_total", .counter, help: "User and system CPU time spent, in seconds.",
                    value: (user + system) / ticks)
            }
        }
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        {
            text.single(
                "process_resident_memory_bytes", .gauge, help: "Resident memory size in bytes.",
                value: pages * Double(sysconf(Int32(_SC_PAGESIZE))))
        }
        if let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            text.single("process_open_fds", .gauge, help: "Open file descriptors.", value: descriptors.count)
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            text.single(
                "process_max_fds", .gauge, help: "The most file descriptors it may open.", value: Double(limit.rlim_cur)
            )
        }
        text.single(
            "process_start_time_seconds", .gauge, help: "Start time of the process since the Unix epoch, in seconds.",
            value: startTime)
        return text.text
    }

    static var swiftVersion: String {
        #if swift(>=6.3)
        "6.3"
        #elseif swift(>=6.2)
        "6.2"
        #else
        "6"
        #endif
    }
}
