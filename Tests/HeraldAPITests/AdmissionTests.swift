import Foundation
import HTTPTypes
import HeraldAPIContract
import HeraldAccess
import HeraldDomain
import Testing

@testable import HeraldAPI

/// The one admission decision of the API and the console, without a server: who may call what,
/// and the rate limit's refusal and headers.
@Suite("admission: permission and rate limit")
struct AdmissionTests {
    static let app = UUID()

    static func key(_ kind: APIKeyKind, app: UUID = app, scopes: [APIKeyScope]? = nil) -> Principal {
        .app(
            AppKey(
                APIKeyRecord(
                    id: UUID(), appID: app, kind: kind, keyPrefix: "hk_test", name: "test", createdAt: Date(),
                    scopes: scopes)))
    }

    /// An admission whose buckets hold `burst` requests and refill at one a second, at a clock
    /// that stands still.
    static func admission(burst: Int = 2, sourcesTrusted: Bool = false) -> Admission {
        let limiter = { RateLimiter(ratePerSecond: 1, burst: burst, clock: { 100 }) }
        return Admission(
            rateLimiter: limiter(), clientRateLimiter: limiter(), clientSourceRateLimiter: limiter(),
            clientAddressesTrusted: sourcesTrusted)
    }

    /// What `body` was refused with (nil: it was admitted).
    static func refusal(_ body: () throws -> Void) -> APIError? {
        do {
            try body()
            return nil
        } catch {
            return error as? APIError
        }
    }

    @Test("each kind of caller against each kind of operation: the code of the refusal, or none")
    func permissions() {
        let otherApp = UUID()
        let cases: [(Principal?, String, String, APIErrorCode?)] = [
            (nil, "getHealth", "/healthz", nil),
            (nil, "createPush", "/v1/pushes", .missingKey),
            (.admin, "createApp", "/v1/apps", nil),
            (.admin, "createPush", "/v1/pushes", .appKeyRequired),
            (Self.key(.admin), "createApp", "/v1/apps", .adminOnly),
            (Self.key(.admin), "getApp", "/v1/apps/\(Self.app.uuidString)", nil),
            (Self.key(.admin), "getApp", "/v1/apps/\(otherApp.uuidString)", .otherApp),
            (Self.key(.admin), "createPush", "/v1/pushes", .serverKeyRequired),
            (Self.key(.server), "getApp", "/v1/apps/\(Self.app.uuidString)", .adminOnly),
            (Self.key(.server), "createPush", "/v1/pushes", nil),
            (Self.key(.server, scopes: [.pushesRead]), "createPush", "/v1/pushes", .scopeMissing),
            (Self.key(.server, scopes: [.devicesWrite]), "registerDevice", "/v1/devices", nil),
            (Self.key(.client), "registerDevice", "/v1/devices", nil),
            (Self.key(.client), "listDevices", "/v1/devices", .clientKeyNotAllowed),
            (Self.key(.server), "anOperationNobodyClassified", "/v1/new", .adminOnly),
        ]
        for (caller, operation, path, expected) in cases {
            let refusal = Self.refusal {
                _ = try Self.admission().admit(caller, to: operation, path: Substring(path), source: nil)
            }
            #expect(refusal?.code == expected, "\(String(describing: caller)) → \(operation)")
            if let refusal { #expect(refusal.status == (expected == .missingKey ? .unauthorized : .forbidden)) }
        }
    }

    @Test("an admitted app key carries its bucket's headers; the admin token and open operations none")
    func headers() throws {
        let admission = Self.admission(burst: 3)
        let first = try admission.admit(Self.key(.server), to: "createPush", path: "/v1/pushes", source: nil)
        #expect(first.headers[.rateLimitLimit] == "1")
        #expect(first.headers[.rateLimitRemaining] == "2")
        #expect(first.principal != nil)
        let admin = try admission.admit(.admin, to: "listApps", path: "/v1/apps", source: nil)
        #expect(admin.principal == .admin && admin.headers.isEmpty)
        let open = try admission.admit(Self.key(.server), to: "getHealth", path: "/healthz", source: nil)
        #expect(open.principal == nil && open.headers.isEmpty)
    }

    @Test(
        "past the burst: 429 rate_limited with Retry-After and the limit's fields; client keys draw on their own bucket"
    )
    func rateLimit() throws {
        let admission = Self.admission(burst: 2)
        for _ in 0..<2 { _ = try admission.admit(Self.key(.server), to: "createPush", path: "/v1/pushes", source: nil) }
        let refusal = try #require(
            Self.refusal {
                _ = try admission.admit(Self.key(.server), to: "createPush", path: "/v1/pushes", source: nil)
            })
        #expect(refusal.status == .tooManyRequests && refusal.code == .rateLimited)
        #expect(refusal.message == "This app may make 1 requests a second (bursts of 2); retry after 1 s.")
        #expect(refusal.headers[HTTPField.Name("Retry-After")!] == "1")
        #expect(refusal.headers[.rateLimitLimit] == "1" && refusal.headers[.rateLimitRemaining] == "0")
        // The app's back-end spent its budget; its installations still register.
        _ = try admission.admit(Self.key(.client), to: "registerDevice", path: "/v1/devices", source: nil)
    }

    @Test("a client key's public source address gets a slice of the client budget; a private one is not told apart")
    func perSource() throws {
        let admission = Self.admission(burst: 2)
        let client = Self.key(.client)
        for _ in 0..<2 {
            _ = try admission.admit(client, to: "registerDevice", path: "/v1/devices", source: "93.184.216.34")
        }
        let refusal = try #require(
            Self.refusal {
                _ = try admission.admit(client, to: "registerDevice", path: "/v1/devices", source: "93.184.216.34")
            })
        #expect(
            refusal.message
                == "This app's client keys may make 1 requests a second from one address (bursts of 2); retry after 1 s."
        )
        // A private address may be a proxy's: only the app's client bucket bounds it (spent above too).
        let privateSource = Self.refusal {
            _ = try admission.admit(client, to: "registerDevice", path: "/v1/devices", source: "10.0.0.7")
        }
        #expect(
            privateSource?.message
                == "This app's client keys may make 1 requests a second (bursts of 2); retry after 1 s.")
    }

    @Test("the operations that run past the request timeout are the stream and the import")
    func traits() {
        #expect(OperationTraits.of(operationID: "streamPushEvents").contains(.outlivesRequestTimeout))
        #expect(OperationTraits.of(operationID: "importDevices").contains(.outlivesRequestTimeout))
        #expect(OperationTraits.of(operationID: "createPush").isEmpty)
    }
}

/// The error codes Herald answers with are the ones the contract lists.
@Suite("error codes in the contract")
struct ErrorCodeContractTests {
    @Test("Schemas/openapi.yaml's Error.code lists exactly APIErrorCode's cases")
    func listed() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let contract = try String(contentsOf: root.appending(path: "Schemas/openapi.yaml"), encoding: .utf8)
        // The Error schema's code description: its lines that start with "- " list the codes.
        let schema = try #require(contract.range(of: "\n    Error:\n"))
        let description = try #require(
            contract.range(of: "description: |\n", range: schema.upperBound..<contract.endIndex))
        let end = try #require(
            contract.range(of: "\n            message:", range: description.upperBound..<contract.endIndex))
        var listed: [String] = []
        for line in contract[description.upperBound..<end.lowerBound].split(separator: "\n")
        where line.trimmingCharacters(in: .whitespaces).hasPrefix("- ") {
            var rest = line[...]
            while let open = rest.firstIndex(of: "`"),
                let close = rest[rest.index(after: open)...].firstIndex(of: "`")
            {
                listed.append(String(rest[rest.index(after: open)..<close]))
                rest = rest[rest.index(after: close)...]
            }
        }
        #expect(listed.count == Set(listed).count, "a code listed twice")
        #expect(Set(listed) == Set(APIErrorCode.allCases.map(\.rawValue)))
    }
}
