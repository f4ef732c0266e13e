import APNsSimulator
import Foundation
import HeraldHTTP2
import NIOCore
import NIOPosix
import NIOSSL
import Testing

/// Herald's HTTP/2 client against a server that is not Herald's: nghttpd (Debian's
/// nghttp2-server, installed by scripts/install-dependencies.sh), over TLS.
@Suite("HTTP/2 client against nghttpd")
struct HTTP2ClientAgainstNghttpdTests {
    @Test("GET and POST with bodies, 404, many concurrent streams, and the server's stream limit")
    func againstNghttpd() async throws {
        let nghttpd = "/usr/sbin/nghttpd"
        try #require(
            FileManager.default.isExecutableFile(atPath: nghttpd),
            "nghttpd is missing: run scripts/install-dependencies.sh")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-nghttpd-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: folder + "/htdocs", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (identity, keyPEM) = try SimulatorIdentity.selfSigned()
        try identity.certificatePEM.write(toFile: folder + "/cert.pem", atomically: true, encoding: .utf8)
        try keyPEM.write(toFile: folder + "/key.pem", atomically: true, encoding: .utf8)
        // 100 KB: several DATA frames and window updates.
        let page = String(repeating: "Herald over HTTP/2. ", count: 5000)
        try page.write(toFile: folder + "/htdocs/page.txt", atomically: true, encoding: .utf8)

        let port = 23000 + Int.random(in: 0..<2000)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: nghttpd)
        server.arguments = [
            "\(port)", folder + "/key.pem", folder + "/cert.pem", "-d", folder + "/htdocs", "--max-concurrent-streams",
            "50",
        ]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer {
            server.terminate()
            kill(server.processIdentifier, SIGKILL)
        }

        let tls = try NIOSSLContext(
            configuration: HTTP2TLS.clientConfiguration(trustedCertificates: identity.certificateChain))
        var connection: HTTP2ClientConnection?
        for _ in 0..<100 where connection == nil {
            connection = try? await HTTP2ClientConnection.connect(
                host: "localhost", port: port, tls: tls, group: MultiThreadedEventLoopGroup.singleton)
            if connection == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let client = try #require(connection)
        #expect(client.maxConcurrentStreams == 50)

        let get = try await client.send(
            HTTP2Request(method: "GET", path: "/page.txt", authority: client.authority), timeout: .seconds(10))
        #expect(get.status == 200)
        #expect(String(buffer: get.body) == page)

        let post = try await client.send(
            HTTP2Request(path: "/page.txt", authority: client.authority, body: ByteBuffer(string: "{}")),
            timeout: .seconds(10))
        #expect(post.status == 200)

        let missing = try await client.send(
            HTTP2Request(method: "GET", path: "/nothing", authority: client.authority), timeout: .seconds(10))
        #expect(missing.status == 404)

        // Request bodies larger than nghttpd's windows (64 KiB per stream and for the
        // connection): the client sends what the windows allow and the rest as WINDOW_UPDATEs
        // come, several streams waiting at once.
        let upload = ByteBuffer(repeating: UInt8(ascii: "h"), count: 300_000)
        let uploads = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await client.send(
                        HTTP2Request(path: "/page.txt", authority: client.authority, body: upload),
                        timeout: .seconds(30)
                    ).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(uploads == Array(repeating: 200, count: 8))

        // 200 requests at once over a limit of 50: the client holds back what exceeds the limit.
        let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    try await client.send(
                        HTTP2Request(method: "GET", path: "/page.txt", authority: client.authority),
                        timeout: .seconds(30)
                    ).body.readableBytes
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(sizes.count == 200)
        #expect(sizes.allSatisfy { $0 == page.utf8.count })
        #expect(client.openStreams == 0)
        await client.close()
        #expect(client.isAcceptingRequests == false)
    }
}
