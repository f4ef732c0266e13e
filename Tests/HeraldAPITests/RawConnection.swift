import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to herald-api, for requests no HTTP client sends: half a request, a
/// body that arrives when the test says. Its reads block a thread of their own (a Dispatch
/// queue's), never one of Swift's cooperative pool, which the server under test needs.
final class RawConnection: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let socket: Int32

    init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(socket)
            throw Failure(description: "connect: errno \(errno)")
        }
    }

    deinit { close(socket) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let result = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, 0) }
            guard result > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += result
        }
    }

    /// Reads until the first line of the answer (its status line), waiting at most 30 s.
    private func blockingReceiveStatusLine() throws -> String {
        setTimeout(seconds: 30)
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while !received.suffix(2).elementsEqual([13, 10]) {
            guard recv(socket, &byte, 1, 0) == 1 else { throw Failure(description: "no answer: errno \(errno)") }
            received.append(byte)
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Reads until `text` has arrived (or 30 s passed); returns everything read.
    private func blockingReceive(until text: String) throws -> String {
        setTimeout(seconds: 30)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: received, as: UTF8.self).contains(text) {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { throw Failure(description: "closed before \"\(text)\" (errno \(errno))") }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Whether the server closes the connection within `seconds` (reads and drops what it sends).
    private func blockingWaitForClose(within seconds: Int) -> Bool {
        setTimeout(seconds: seconds)
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let result = recv(socket, &buffer, buffer.count, 0)
            if result == 0 { return true }
            if result < 0 { return false }
        }
    }

    private func setTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Reads until the first line of the answer (its status line), waiting at most 30 s.
    func receiveStatusLine() async throws -> String {
        try await offThePool { try self.blockingReceiveStatusLine() }
    }

    /// Reads until `text` has arrived (or 30 s passed); returns everything read.
    func receive(until text: String) async throws -> String {
        try await offThePool { try self.blockingReceive(until: text) }
    }

    /// Whether the server closes the connection within `seconds`.
    func waitForClose(within seconds: Int) async -> Bool {
        (try? await offThePool { self.blockingWaitForClose(within: seconds) }) ?? false
    }

    private func offThePool<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result<Value, any Error> { try body() }) }
        }
    }
}
