import Foundation
import HTTPTypes
import HeraldAPIContract
import HeraldAccess
import HeraldCore
import HeraldDomain
import HeraldStore
import HeraldTiming
import OpenAPIRuntime
import Synchronization

// Devices: registration (also with a client key), look-ups, changes, bulk import.
extension APIHandler {
    func registerDevice(_ input: Operations.RegisterDevice.Input) async throws -> Operations.RegisterDevice.Output {
        let appID = try Principal.requireApp()
        guard case .json(let body) = input.body else { throw APIError.badRequest("send the device as JSON") }
        let app = try await callingApp(appID)
        var registration = try DeviceInput.registration(body, appID: appID, bundleID: app.bundleID)
        try await checkClientRules(
            app: app, token: registration.token, alias: body.alias, signature: body.aliasSignature,
            tags: body.tags ?? [], attributes: body.attributes.map { Array($0.additionalProperties.value.keys) } ?? [])
        // An alias bound under a signature for the old token needs one for the new token.
        registration.carriesAlias = !(Principal.isClient && app.clientRules.identityVerification)
        if let active = try await deviceQuota.reached(appID: appID),
            try await devices.device(token: registration.token, appID: appID) == nil,
            try await !retiresActiveDevice(registration)
        {
            throw quotaReached(active: active)
        }
        let registered = try await withDeviceLimits { try await devices.register(registration) }
        guard let device = try await devices.device(id: registered.id, appID: appID) else {
            throw APIError.notFound("device")
        }
        let shown = shown(device, app: app)
        return registered.isNew ? .created(.init(body: .json(shown))) : .ok(.init(body: .json(shown)))
    }

    /// Whether `registration` names a previous token that is an active device: the rotation
    /// retires it, so the app's count of active devices does not grow.
    private func retiresActiveDevice(_ registration: DeviceRegistration) async throws -> Bool {
        guard let previous = registration.previousToken else { return false }
        return try await devices.device(token: previous, appID: registration.appID)?.status == .active
    }

    func listDevices(_ input: Operations.ListDevices.Input) async throws -> Operations.ListDevices.Output {
        let appID = try Principal.requireApp()
        let limit = try Self.pageSize(input.query.limit)
        let cursor = input.query.cursor ?? 0
        guard cursor >= 0 else {
            throw APIError.badRequest("cursor is a registration id from next_cursor", field: "cursor")
        }
        let page: [Device]
        if let prefix = input.query.tokenPrefix {
            guard input.query.alias == nil, input.query.tag == nil else {
                throw APIError.badRequest(
                    "look devices up by token_prefix, alias or tag, one at a time", field: "token_prefix")
            }
            guard let range = TokenPrefix(hexadecimal: prefix) else {
                throw APIError.badRequest(
                    "token_prefix is 4 to 200 hexadecimal digits (the start of a device token)", field: "token_prefix")
            }
            let found = try await devices.devices(
                tokensFrom: range.lower, below: range.upper, appID: appID, limit: limit)
            return .ok(.init(body: .json(.init(devices: found.map(Components.Schemas.Device.init)))))
        }
        switch (input.query.alias, input.query.tag) {
        case (let alias?, nil):
            try Self.queryParameter { () throws(APIError) in try DeviceInput.alias(alias) }
            page = try await devices.devices(
                alias: alias, appID: appID, limit: min(limit, DeviceLimits.maximumDevicesPerAlias + 1)
            )
            .filter { $0.id > cursor }
        case (nil, let tag?):
            try Self.queryParameter { () throws(APIError) in try DeviceInput.tags([tag], field: "tag") }
            page = try await devices.devices(tag: tag, appID: appID, after: cursor, limit: limit)
        case (nil, nil):
            page = try await devices.devices(appID: appID, after: cursor, limit: limit)
        case (.some, .some):
            throw APIError.badRequest("look devices up by alias or by tag, not both at once", field: "tag")
        }
        let next = input.query.alias == nil && page.count == limit ? page.last?.id : nil
        return .ok(.init(body: .json(.init(devices: page.map(Components.Schemas.Device.init), nextCursor: next))))
    }

    func getDevice(_ input: Operations.GetDevice.Input) async throws -> Operations.GetDevice.Output {
        let appID = try Principal.requireApp()
        guard let device = try await devices.device(id: input.path.registrationId, appID: appID) else {
            throw APIError.notFound("device \(input.path.registrationId)")
        }
        return .ok(.init(body: .json(.init(device))))
    }

    func updateDevice(_ input: Operations.UpdateDevice.Input) async throws -> Operations.UpdateDevice.Output {
        let appID = try Principal.requireApp()
        let id = input.path.registrationId
        guard case .json(let body) = input.body else { throw APIError.badRequest("send the changes as JSON") }
        let app = try await callingApp(appID)
        if Principal.isClient, !app.clientRules.legacyAccess {
            throw APIError(
                .forbidden, code: .addressByToken,
                message:
                    "A client key changes only the device whose token it presents: PATCH /v1/devices/by-token/{token}.")
        }
        return .ok(.init(body: .json(try await update(deviceID: id, with: body, app: app))))
    }

    func getDeviceByToken(_ input: Operations.GetDeviceByToken.Input) async throws
        -> Operations.GetDeviceByToken.Output
    {
        let app = try await callingApp(try Principal.requireApp())
        let device = try await device(token: input.path.token, app: app)
        return .ok(.init(body: .json(shown(device, app: app))))
    }

    func updateDeviceByToken(_ input: Operations.UpdateDeviceByToken.Input) async throws
        -> Operations.UpdateDeviceByToken.Output
    {
        guard case .json(let body) = input.body else { throw APIError.badRequest("send the changes as JSON") }
        let app = try await callingApp(try Principal.requireApp())
        let device = try await device(token: input.path.token, app: app)
        return .ok(.init(body: .json(try await update(deviceID: device.id, with: body, app: app))))
    }

    func deleteDeviceByToken(_ input: Operations.DeleteDeviceByToken.Input) async throws
        -> Operations.DeleteDeviceByToken.Output
    {
        let app = try await callingApp(try Principal.requireApp())
        let device = try await device(token: input.path.token, app: app)
        guard try await devices.delete(id: device.id, appID: app.id) else {
            throw APIError.notFound("a device with this token")
        }
        return .noContent(.init())
    }

    func deleteDevice(_ input: Operations.DeleteDevice.Input) async throws -> Operations.DeleteDevice.Output {
        let appID = try Principal.requireApp()
        guard try await devices.delete(id: input.path.registrationId, appID: appID) else {
            throw APIError.notFound("device \(input.path.registrationId)")
        }
        return .noContent(.init())
    }

    func importDevices(_ input: Operations.ImportDevices.Input) async throws -> Operations.ImportDevices.Output {
        let appID = try Principal.requireApp()
        let app = try await callingApp(appID)
        let (format, body): (DeviceImportParser.Format, HTTPBody) =
            switch input.body {
            case .applicationXNdjson(let body): (.ndjson, body)
            case .csv(let body): (.csv, body)
            }
        if let active = try await deviceQuota.reached(appID: appID) { throw quotaReached(active: active) }
        guard imports.slots.tryAcquire() else {
            throw APIError.tooManyRequests(
                "this herald-api runs \(settings.importConnections) imports at once and all are busy; retry in a while (nothing of this one was imported)",
                code: .importsBusy, retryAfterSeconds: 30)
        }
        defer { imports.slots.release() }
        let parser = ImportProgress(parser: DeviceImportParser(format: format, appID: appID, bundleID: app.bundleID))
        let chunks = ImportChunks(
            body: body, progress: parser,
            pace: ImportPace(
                maximumBytes: settings.maximumImportBytes, deadline: settings.importDeadline,
                minimumBytesPerSecond: settings.importMinimumBytesPerSecond))
        let accepted: Int
        let overLimits: [(line: Int, message: String)]
        let counted = Mutex(false)
        defer { if counted.withLock({ $0 }) { metrics.importsRunning.subtract(1, ordering: .relaxed) } }
        do {
            (accepted, overLimits) = try await imports.devices.importDevices(
                appID: appID, chunks: chunks, connectionWithin: settings.importConnectionTimeout,
                mergeWithin: settings.importMergeTimeout
            ) { [metrics] in
                counted.withLock { $0 = true }
                metrics.importsRunning.add(1, ordering: .relaxed)
            }
        } catch is ImportInProgress {
            throw APIError(
                .conflict, code: .importInProgress,
                message: "an import of this app is already running; send the next one when it has answered")
        } catch is ImportConnectionUnavailable {
            throw APIError(
                .serviceUnavailable, code: .databaseUnavailable,
                message:
                    "no database connection for the import within \(settings.importConnectionTimeout.wholeMilliseconds / 1000) s; retry in a while (nothing of this one was imported)",
                headers: [.retryAfter: "30"])
        } catch is ImportMergeTimedOut {
            throw APIError(
                .serviceUnavailable, code: .importTimedOut,
                message:
                    "merging the import into the app's devices took longer than \(settings.importMergeTimeout.wholeMilliseconds / 1000) s (HERALD_API_IMPORT_MERGE_TIMEOUT_MS); split the file or retry when the database is less busy (nothing of this one was imported)",
                headers: [.retryAfter: "60"])
        }
        var result = parser.result
        result.rejected += overLimits.count
        result.errors = Array(
            (result.errors + overLimits).sorted { $0.line < $1.line }.prefix(DeviceImportParser.reportedErrors))
        logger.info(
            "devices imported",
            metadata: [
                "app": "\(appID)", "lines": "\(result.lines)", "accepted": "\(accepted)",
                "rejected": "\(result.rejected)",
            ])
        return .ok(
            .init(
                body: .json(
                    .init(
                        lines: result.lines, accepted: accepted, rejected: result.rejected,
                        errors: result.errors.map { .init(line: $0.line, message: $0.message) }))))
    }

    // MARK: Helpers

    /// The device of `app` with the token `text`, or a 404.
    private func device(token text: String, app: App) async throws -> Device {
        let token = try DeviceInput.token(text)
        guard let device = try await devices.device(token: token, appID: app.id) else {
            throw APIError.notFound("a device with this token")
        }
        return device
    }

    /// Applies a `DeviceUpdate` to the device `deviceID` of `app` (a client key's under the
    /// client rules) and answers the device as changed.
    private func update(deviceID id: Int64, with body: Components.Schemas.DeviceUpdate, app: App) async throws
        -> Components.Schemas.Device
    {
        if let alias = body.alias, !alias.isEmpty { try DeviceInput.alias(alias) }
        try DeviceInput.tags(body.addTags, field: "add_tags")
        try DeviceInput.tags(body.removeTags, field: "remove_tags")
        let described = try DeviceInput.described(
            country: body.country, appVersion: body.appVersion, osVersion: body.osVersion, attributes: body.attributes)
        guard let device = try await devices.device(id: id, appID: app.id) else {
            throw APIError.notFound("device \(id)")
        }
        try await checkClientRules(
            app: app, token: device.token, alias: body.alias, signature: body.aliasSignature,
            tags: (body.addTags ?? []) + (body.removeTags ?? []),
            attributes: body.attributes.map { Array($0.additionalProperties.value.keys) } ?? [])
        try await withDeviceLimits {
            if let alias = body.alias {
                try await devices.setAlias(alias.isEmpty ? nil : alias, deviceID: id, appID: app.id)
            }
            if body.addTags != nil || body.removeTags != nil {
                try await devices.updateTags(
                    adding: body.addTags ?? [], removing: body.removeTags ?? [], deviceID: id, appID: app.id)
            }
            if described.country != nil || body.appVersion != nil || body.osVersion != nil || body.attributes != nil
                || body.authorizationStatus != nil
            {
                try await devices.describe(
                    deviceID: id, appID: app.id, country: described.country, appVersion: body.appVersion,
                    osVersion: body.osVersion, attributes: described.attributes,
                    authorizationStatus: body.authorizationStatus.flatMap { AuthorizationStatus(rawValue: $0.rawValue) }
                )
            }
        }
        guard let device = try await devices.device(id: id, appID: app.id) else {
            throw APIError.notFound("device \(id)")
        }
        return shown(device, app: app)
    }

    /// A device as the caller may see it: a client key gets no registration id (clients address
    /// their device by its token), unless the app keeps legacy client access.
    func shown(_ device: Device, app: App) -> Components.Schemas.Device {
        var shown = Components.Schemas.Device(device)
        if Principal.isClient, !app.clientRules.legacyAccess { shown.registrationId = nil }
        return shown
    }

    /// The rules a client key's device write is held to (nothing for a server key): an alias is
    /// bound only with the back-end's signature when the app verifies identities (clearing one
    /// needs none), only the app's client tags may be added or removed, and only its client
    /// attributes set or removed.
    /// - Throws: ``APIError`` 403 naming the rule.
    func checkClientRules(
        app: App, token: [UInt8], alias: String?, signature: String?, tags: [String], attributes: [String]
    ) async throws {
        guard Principal.isClient else { return }
        if let alias, !alias.isEmpty, app.clientRules.identityVerification {
            guard let signature else {
                throw APIError(
                    .forbidden, code: .aliasSignatureRequired,
                    message:
                        "This app verifies identities: a client key binds an alias only with alias_signature, v2.EXPIRES.HMAC computed by your back-end under the app's identity secret (docs/security.md).",
                    field: "alias_signature")
            }
            let secrets = try await identitySecrets.secrets(
                appID: app.id, cipher: try requireCipher(for: "identity secrets"))
            let check = AliasSignature.check(
                signature, alias: alias, token: token, secrets: secrets, acceptsV1: app.clientRules.aliasSignaturesV1,
                now: Int64(Date().timeIntervalSince1970))
            if let refusal = AliasSignature.refusal(check, hasSecrets: !secrets.isEmpty) {
                throw APIError(
                    .forbidden, code: refusal.expired ? .aliasSignatureExpired : .aliasSignatureInvalid,
                    message: refusal.message, field: "alias_signature")
            }
        }
        if let allowed = app.clientRules.allowedTags, let refused = tags.first(where: { !allowed.contains($0) }) {
            throw APIError(
                .forbidden, code: .tagNotAllowed,
                message:
                    "A client key may set only this app's client tags (client_tags, named by its admin); \"\(refused)\" is not one of them.",
                field: "tags")
        }
        if let allowed = app.clientRules.allowedAttributes,
            let refused = attributes.sorted().first(where: { !allowed.contains($0) })
        {
            throw APIError(
                .forbidden, code: .attributeNotAllowed,
                message:
                    "A client key may set only this app's client attributes (client_attributes, named by its admin); \"\(refused)\" is not one of them.",
                field: "attributes.\(refused)")
        }
    }

    /// A bad query parameter is a malformed request (400), not an unacceptable value.
    static func queryParameter(_ check: () throws(APIError) -> Void) throws(APIError) {
        do {
            try check()
        } catch {
            throw APIError.badRequest(error.message, field: error.field)
        }
    }

    func callingApp(_ appID: UUID) async throws -> App {
        guard let app = try await apps.app(id: appID) else { throw APIError.notFound("app") }
        return app
    }

    /// Runs a device write, answering 422 when it would exceed a device limit.
    func withDeviceLimits<Result>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as DeviceLimits.Exceeded {
            throw APIError.invalid(error.field, error.message)
        }
    }
}

/// The parser's state, shared between the body reader and the handler that reports it.
final class ImportProgress: @unchecked Sendable {
    // Touched by one task at a time: the COPY writer while it reads, the handler after.
    var parser: DeviceImportParser

    init(parser: DeviceImportParser) {
        self.parser = parser
    }

    var result: (lines: Int, rejected: Int, errors: [(line: Int, message: String)]) {
        (parser.lines, parser.rejected, parser.errors)
    }
}

/// The import body as chunks of parsed rows, read as the COPY asks for them, within the
/// import's bounds (``ImportPace``).
struct ImportChunks: AsyncSequence, Sendable {
    typealias Element = [ImportLine]
    let body: HTTPBody
    let progress: ImportProgress
    let pace: ImportPace

    struct AsyncIterator: AsyncIteratorProtocol {
        var chunks: HTTPBody.AsyncIterator
        let progress: ImportProgress
        var pace: ImportPace
        var finished = false
        let started = ContinuousClock.now

        mutating func next() async throws -> [ImportLine]? {
            while !finished {
                // Only the time spent waiting for the client counts against its pace: not the
                // parsing, nor the COPY into PostgreSQL, which hold the next read back.
                let asked = ContinuousClock.now
                guard let chunk = try await chunks.next() else {
                    finished = true
                    let last = progress.parser.finish()
                    return last.isEmpty ? nil : last
                }
                try pace.received(chunk.count, waited: .now - asked, elapsed: .now - started)
                let rows = await progress.parser.feed(chunk)
                if !rows.isEmpty { return rows }
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(chunks: body.makeAsyncIterator(), progress: progress, pace: pace)
    }
}

/// The bounds of one import's upload: its size, how long herald-api may wait for it, and the
/// slowest rate it may arrive at (over each ``window`` of waiting). Only the time herald-api
/// spends waiting for the client counts: while it parses and copies what has come, the client
/// is not slow, however long that takes on a busy database (an import once read as too slow
/// for the server's own work). An upload that stops altogether is closed by the server's idle
/// timeout; the database's side has deadlines of its own (``DeviceImports``). The whole upload,
/// waiting and copying together, has a ceiling of its own (``ceiling``, twice the deadline),
/// checked as each part is read: a database that takes the rows slower and slower holds an
/// import slot, a connection and the app's import lock no longer than that (a write it never
/// takes at all is not bounded: ``DeviceRepository/importDevices`` says why).
struct ImportPace: Sendable {
    static let window: Duration = .seconds(30)

    let maximumBytes: Int
    let deadline: Duration
    let minimumBytesPerSecond: Int
    /// The upload's whole time at most, herald-api's own work included.
    var ceiling: Duration { deadline * 2 }

    private var read = 0
    private var waited: Duration = .zero
    private var windowWaited: Duration = .zero
    private var windowBytes = 0

    init(maximumBytes: Int, deadline: Duration, minimumBytesPerSecond: Int) {
        self.maximumBytes = maximumBytes
        self.deadline = deadline
        self.minimumBytesPerSecond = minimumBytesPerSecond
    }

    /// Counts `bytes` more of the upload, which herald-api waited `waited` for, `elapsed` into it.
    /// - Throws: ``APIError`` 413 past the size, 408 past the deadline or below the rate, 503
    ///   past the ceiling.
    mutating func received(_ bytes: Int, waited: Duration, elapsed: Duration = .zero) throws(APIError) {
        if elapsed > ceiling {
            throw APIError(
                .serviceUnavailable, code: .importTimedOut,
                message:
                    "herald-api has spent \(elapsed.wholeMilliseconds / 1000) s on this import, past its ceiling of \(ceiling.wholeMilliseconds / 1000) s (twice HERALD_API_IMPORT_DEADLINE_MS): the database takes the rows slowly; retry when it is less busy, or split the file (nothing of this one was imported)",
                headers: [.retryAfter: "60"])
        }
        read += bytes
        if read > maximumBytes {
            throw APIError(
                .contentTooLarge, code: .importTooLarge,
                message: "an import is at most \(maximumBytes) bytes; split the file (nothing of this one was imported)"
            )
        }
        self.waited += waited
        if self.waited > deadline {
            throw APIError(
                .requestTimeout, code: .importTooSlow,
                message:
                    "an import must arrive within \(deadline.wholeMilliseconds / 1000) s of waiting for it; split the file (nothing of this one was imported)"
            )
        }
        windowBytes += bytes
        windowWaited += waited
        guard windowWaited >= Self.window else { return }
        let rate = Double(windowBytes) / windowWaited.fractionalSeconds
        if minimumBytesPerSecond > 0, rate < Double(minimumBytesPerSecond) {
            throw APIError(
                .requestTimeout, code: .importTooSlow,
                message:
                    "the upload arrived at \(Int(rate)) bytes/s, below the \(minimumBytesPerSecond) an import needs; send it over a faster link (nothing of this one was imported)"
            )
        }
        windowWaited = .zero
        windowBytes = 0
    }
}

extension APIHandler {
    /// 403 for a new device of an app that has its quota of active devices (counted).
    func quotaReached(active: Int64) -> APIError {
        metrics.deviceQuotaRefusals.add(1, ordering: .relaxed)
        return APIError(
            .forbidden, code: .deviceQuotaReached,
            message:
                "This app has \(active) active devices, its quota of \(deviceQuota.limit) (HERALD_API_MAX_ACTIVE_DEVICES_PER_APP): a device already registered may register again, a new one is refused until devices are deleted or found invalid, or the operator raises the quota."
        )
    }
}
