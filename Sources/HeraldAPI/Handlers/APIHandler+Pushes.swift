import Foundation
import HeraldAPIContract
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldRecords
import HeraldStore
import OpenAPIRuntime

// Pushes: accept, validate, follow, cancel, pause, recall; and the app's statistics.
extension APIHandler {
    func createPush(_ input: Operations.CreatePush.Input) async throws -> Operations.CreatePush.Output {
        let appID = try Principal.requireApp()
        guard case .json(let request) = input.body else { throw APIError.badRequest("send the push as JSON") }
        if let key = input.headers.idempotencyKey, !(1...255).contains(key.count) {
            throw APIError.badRequest("an Idempotency-Key is 1 to 255 characters", field: "Idempotency-Key")
        }
        let composed = try await composedPush(request, appID: appID)
        let collapseID = try await collapseID(for: composed, appID: appID)
        let id = UUID.random()
        var definition = NewPush(
            id: id, appID: appID, state: composed.scheduledAt == nil ? .accepted : .scheduled,
            audienceJSON: composed.audience.json, notificationJSON: composed.notificationJSON,
            optionsJSON: composed.optionsJSON,
            payload: composed.payload, template: composed.personalization?.stored,
            pushType: composed.pushType.rawValue, priority: composed.priority.rawValue,
            priorityClass: composed.priorityClass,
            expiresAt: composed.expiresAt, collapseID: collapseID, idempotencyKey: input.headers.idempotencyKey,
            scheduledAt: composed.scheduledAt, throttlePerSecond: composed.throttlePerSecond,
            finishWithinSeconds: composed.finishWithinSeconds, timing: composed.timing,
            traceparent: RequestIdentity.trace?.child().traceparent,
            origin: Principal.auditOrigin)
        definition.split = composed.split
        definition.variantPayloads = composed.variantPayloads
        let (push, created) = try await pushWriter.create(
            definition,
            announcement: try announcement(.created, pushID: id, appID: appID, traceparent: definition.traceparent))
        if !created {
            guard
                try await pushes.matches(
                    id: push.id, audienceJSON: definition.audienceJSON,
                    notificationJSON: definition.notificationJSON, optionsJSON: definition.optionsJSON)
            else {
                throw APIError.conflict(
                    "this Idempotency-Key was used for a different push (\(push.id.lowercased)); use a new key for a new push",
                    code: .idempotencyKeyReused)
            }
        } else {
            metrics.pushesAccepted.add(1, ordering: .relaxed)
            logger.info(
                "push accepted",
                metadata: [
                    "push": "\(push.id.lowercased)", "app": "\(appID.lowercased)",
                    "key": "\(Principal.currentKey?.keyID.lowercased ?? "-")",
                    "request": "\(RequestIdentity.requestID ?? "-")",
                    "trace": "\(RequestIdentity.trace?.traceID ?? "-")",
                ])
        }
        return .accepted(.init(headers: .init(idempotentReplayed: created ? nil : "true"), body: .json(.init(push))))
    }

    /// How many active devices `audience` holds now, for a dry run: everyone or one tag from the
    /// kept device counts (exact at any size, no scan: a tag of 500,000 in ten million devices took
    /// 4.6 s to count up to the bound and estimate), any other audience counted exactly up to
    /// `api.validateExactUpTo` and estimated past it.
    /// - Returns: the size, and whether it is an estimate.
    private func dryRunSize(of audience: PushAudience, appID: UUID) async throws -> (Int64, Bool) {
        guard let kept = audience.keptCount else {
            return try await audiences.boundedCount(
                AudienceSelection(appID: appID, audience: audience), exactUpTo: Int64(settings.validateExactUpTo))
        }
        let counts = try await deviceCounts.devices(appID: appID, carrying: kept.tag)
        return (kept.environment.map { counts.activeByEnvironment[$0.rawValue] ?? 0 } ?? counts.active, false)
    }

    /// A dry run's local-time plan past `api.validateExactUpTo` devices is estimated from about
    /// this many of the audience's devices, read from this many slices of the app's device ids
    /// (docs/local-time.md).
    static let timeZoneSampleSize = 10_000
    static let timeZoneSampleSlices = 1_000

    func validatePush(_ input: Operations.ValidatePush.Input) async throws -> Operations.ValidatePush.Output {
        let appID = try Principal.requireApp()
        guard case .json(let request) = input.body else { throw APIError.badRequest("send the push as JSON") }
        let composed = try await composedPush(request, appID: appID)
        _ = try await collapseID(for: composed, appID: appID)
        var warnings = composed.warnings
        let (size, estimated) = try await dryRunSize(of: composed.audience, appID: appID)
        if size == 0 { warnings.append("the audience holds no active device right now") }
        if estimated {
            warnings.append(
                "the audience holds more than \(settings.validateExactUpTo) devices; its size is PostgreSQL's estimate")
        }
        let environments = Set(try await credentials.credentials(appID: appID).map(\.environment))
        for environment in composed.audience.environment.map({ [$0] }) ?? APNsEnvironment.allCases
        where !environments.contains(environment) {
            warnings.append(
                "the app has no \(environment.rawValue) APNs credential: its \(environment.rawValue) devices will be rejected"
            )
        }
        if let rate = composed.throttlePerSecond, size > 0 {
            warnings.append("at \(rate)/s the fan-out takes about \(max(1, size / Int64(rate))) s")
        }
        var waves: [PushWave]?
        var wavesEstimated = false
        if let timing = composed.timing {
            let policy = try await apps.app(id: appID)?.deliveryPolicy
            if timing.quietHours == .hold, policy?.quietHours == nil {
                warnings.append("quiet_hours is hold, but the app has no quiet hours: nobody is held")
            }
            if timing.sendsInWaves(appHasQuietHours: policy?.quietHours != nil) {
                let selection = AudienceSelection(appID: appID, audience: composed.audience)
                // Too many to group within a request: each zone's share of a sample spread over
                // the app's devices, applied to the audience's size. A sample that found nobody
                // (the devices removed since they were counted) gives way to the exact count.
                let sampled =
                    size > Int64(settings.validateExactUpTo)
                    ? try await audiences.sampledTimeZoneGroups(
                        selection, audienceSize: size, sampleSize: Self.timeZoneSampleSize,
                        slices: Self.timeZoneSampleSlices) : []
                let taken = sampled.reduce(Int64(0)) { $0 + $1.devices }
                var groups = TimeZoneSample.scaled(sampled, to: size)
                if groups.isEmpty {
                    groups = try await audiences.timeZoneGroups(selection)
                } else {
                    wavesEstimated = true
                    warnings.append(
                        "the waves' device counts are estimated from a sample of \(taken) of the audience's devices")
                }
                waves = WavePlanner(timing: timing, policy: policy).plan(
                    groups: groups, start: composed.scheduledAt ?? Date())
            }
        }
        return .ok(
            .init(
                body: .json(
                    .init(
                        audienceSize: size, audienceSizeEstimated: estimated,
                        payloadBytes: composed.sentPayloadBytes,
                        payloadLimit: composed.pushType.maximumPayloadBytes,
                        pushType: composed.pushType.rawValue, priority: composed.priority.rawValue,
                        priorityClass: .init(composed.priorityClass),
                        placeholders: composed.personalization?.names,
                        localizations: composed.personalization?.localizations,
                        waves: waves?.map(Components.Schemas.PushWave.init),
                        wavesEstimated: waves == nil ? nil : wavesEstimated, warnings: warnings))
            ))
    }

    func listPushes(_ input: Operations.ListPushes.Input) async throws -> Operations.ListPushes.Output {
        let appID = try Principal.requireApp()
        let limit = try Self.pageSize(input.query.limit)
        let cursor = try input.query.cursor.map { text throws(APIError) in try Self.uuid(text, "cursor") }
        let schedule = try input.query.scheduleId.map { text throws(APIError) in try Self.uuid(text, "schedule_id") }
        let page = try await pushes.progressList(
            appID: appID, state: input.query.state?.store, before: cursor, limit: limit, scheduleID: schedule)
        return .ok(
            .init(
                body: .json(
                    .init(
                        pushes: page.map(Components.Schemas.PushStatus.init),
                        nextCursor: page.count == limit ? page.last?.push.id.lowercased : nil))))
    }

    func getPush(_ input: Operations.GetPush.Input) async throws -> Operations.GetPush.Output {
        let (id, progress) = try await pushProgress(input.path.pushId)
        var status = Components.Schemas.PushStatus(progress)
        // Only the one push's answer says what it said and what phones reported: a list, and each
        // event of a live progress stream (a poll every half second), do without the decode and
        // the read. The counts are read after the push was found to be the caller's.
        status.notification = try? JSONDecoder().decode(
            OpenAPIObjectContainer.self, from: Data(progress.push.definition.notificationJSON.utf8))
        status.engagement = .init(
            try await engagement.counts(pushID: id),
            reached: status.counters.accepted + status.counters.deliveredOnline)
        if let split = progress.push.definition.split {
            let counters = try await pushes.variantCounters(pushID: id)
            let engaged = try await engagement.countsByVariant(pushID: id)
            status.variants = split.variants.enumerated().map { index, variant in
                let own = counters.first { $0.variant == index } ?? VariantCounters(variant: index)
                return .init(
                    name: variant.name, weight: variant.weight, counters: .init(own),
                    engagement: .init(engaged[index] ?? EngagementCounts(), reached: own.accepted + own.deliveredOnline)
                )
            }
        }
        return .ok(.init(body: .json(status)))
    }

    func getPushReport(_ input: Operations.GetPushReport.Input) async throws -> Operations.GetPushReport.Output {
        let status = try await getPush(.init(path: .init(pushId: input.path.pushId))).ok.body.json
        return .ok(.init(body: .csv(.init(PushReport(status: status).csv))))
    }

    func cancelPush(_ input: Operations.CancelPush.Input) async throws -> Operations.CancelPush.Output {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(input.path.pushId, "pushId")
        if try await !pushes.cancel(
            id: id, appID: appID, outbox: [try announcement(.canceled, pushID: id, appID: appID)],
            audit: auditEntry("push.canceled", appID: appID, target: id.lowercased))
        {
            let current = try await progress(input.path.pushId)
            throw APIError.conflict(
                "the push is \(current.state.rawValue) already; only scheduled and running pushes can be canceled",
                code: .pushFinished)
        }
        logger.info("push canceled", metadata: ["push": "\(id)"])
        return .ok(.init(body: .json(try await progress(input.path.pushId))))
    }

    func pausePush(_ input: Operations.PausePush.Input) async throws -> Operations.PausePush.Output {
        .ok(.init(body: .json(try await setPaused(true, input.path.pushId))))
    }

    func resumePush(_ input: Operations.ResumePush.Input) async throws -> Operations.ResumePush.Output {
        .ok(.init(body: .json(try await setPaused(false, input.path.pushId))))
    }

    func recallPush(_ input: Operations.RecallPush.Input) async throws -> Operations.RecallPush.Output {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(input.path.pushId, "pushId")
        guard let original = try await pushes.push(id: id, appID: appID) else {
            throw APIError.notFound("push \(input.path.pushId)")
        }
        guard original.definition.recallOf == nil else {
            throw APIError.conflict("this push is itself a recall; it cannot be recalled", code: .recallOfRecall)
        }
        if let existing = try await pushes.recall(of: id, appID: appID) {
            return .accepted(.init(body: .json(.init(existing))))
        }
        try await pushes.cancel(
            id: id, appID: appID, outbox: [try announcement(.canceled, pushID: id, appID: appID)],
            audit: auditEntry("push.canceled", appID: appID, target: id.lowercased, details: ["by": "recall"]))
        let recallID = UUID()
        var payload = APNsPayload()
        payload.contentAvailable = true
        // Written whole here (herald-center stamps no recall): the recall's own id, the one it
        // revokes and that push's collapse id (the request identifier of its notification on iOS).
        payload.custom[HeraldPayloadKey.name] = .object([
            "push_id": .string(recallID.lowercased), "revoke": .string(id.lowercased),
            "collapse_id": .string(original.definition.collapseID),
        ])
        let recall = NewPush(
            id: recallID, appID: appID, state: .accepted, audienceJSON: PushAudience.everyone.json,
            notificationJSON: #"{"recall_of":"\#(id.lowercased)"}"#, payload: try payload.validated(for: .background),
            pushType: APNsPushType.background.rawValue, priority: APNsPriority.conserve.rawValue,
            priorityClass: original.definition.priorityClass,
            collapseID: original.definition.collapseID, recallOf: id,
            traceparent: RequestIdentity.trace?.child().traceparent, origin: Principal.auditOrigin)
        let (push, _) = try await pushes.createRecall(
            recall,
            announcement: try announcement(.created, pushID: recallID, appID: appID, traceparent: recall.traceparent))
        logger.info("push recalled", metadata: ["push": "\(id)", "recall": "\(push.id)"])
        return .accepted(.init(body: .json(.init(push))))
    }

    func listPushFailures(_ input: Operations.ListPushFailures.Input) async throws -> Operations.ListPushFailures.Output
    {
        let push = try await progress(input.path.pushId)
        let limit = try Self.pageSize(input.query.limit)
        let cursor = input.query.cursor ?? 0
        guard let id = UUID(uuidString: push.id) else { throw APIError.notFound("push") }
        let page = try await pushes.failurePage(pushID: id, reason: input.query.reason, after: cursor, limit: limit)
        let failures = page.map { entry in
            Components.Schemas.Failure(
                registrationId: entry.failure.deviceID,
                status: Components.Schemas.Failure.StatusPayload(rawValue: entry.failure.status.rawValue) ?? .rejected,
                reason: entry.failure.reason, httpStatus: entry.failure.httpStatus, attempts: entry.failure.attempts,
                failedAt: entry.failedAt)
        }
        return .ok(
            .init(
                body: .json(
                    .init(failures: failures, nextCursor: page.count == limit ? page.last?.failure.deviceID : nil))))
    }

    func streamPushEvents(_ input: Operations.StreamPushEvents.Input) async throws -> Operations.StreamPushEvents.Output
    {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(input.path.pushId, "pushId")
        guard try await pushes.progress(id: id, appID: appID) != nil else {
            throw APIError.notFound("push \(input.path.pushId)")
        }
        // The stream ends once the key it was opened with is revoked, checked as its events go out
        // (every few seconds at most, and at least at each keep-alive):
        // a revoked key, or a console session of it, does not go on watching.
        let keyID = Principal.currentKey?.keyID
        let events = PushProgressEvents(
            events: try progressHub.subscribe(pushID: id, appID: appID), checkEvery: settings.streamKeyCheck
        ) { [keys, logger] in
            guard let keyID else { return true }
            do {
                return try await keys.liveKey(id: keyID) != nil
            } catch {
                logger.debug("cannot check a stream's key; it goes on", metadata: ["error": "\(error)"])
                return true
            }
        }
        return .ok(.init(body: .textEventStream(HTTPBody(events, length: .unknown, iterationBehavior: .single))))
    }

    func getStatistics(_ input: Operations.GetStatistics.Input) async throws -> Operations.GetStatistics.Output {
        let appID = try Principal.requireApp()
        let since = input.query.since ?? Date().addingTimeInterval(-30 * 86_400)
        let statistics = try await pushes.statistics(appID: appID, since: since)
        var timeline: [Components.Schemas.StatisticsBucket]?
        if let granularity = input.query.granularity {
            let hourly = granularity == .hour
            // An hourly timeline covers at most the last 7 days; a daily one the whole window.
            let from = hourly ? max(since, Date().addingTimeInterval(-7 * 86_400)) : since
            timeline = try await pushes.timeline(appID: appID, since: from, hourly: hourly).map {
                .init(
                    start: $0.start, pushes: $0.pushes, targeted: $0.targeted, accepted: $0.accepted,
                    deliveredOnline: $0.deliveredOnline, rejected: $0.rejected, expired: $0.expired,
                    canceled: $0.canceled, received: $0.received, opened: $0.opened)
            }
        }
        return .ok(
            .init(
                body: .json(
                    .init(
                        devices: .init(statistics.devices),
                        pushes: .init(additionalProperties: statistics.pushesByState),
                        delivery: .init(statistics.delivery), since: since, timeline: timeline))))
    }

    func listTagStatistics(_ input: Operations.ListTagStatistics.Input) async throws
        -> Operations.ListTagStatistics.Output
    {
        let appID = try Principal.requireApp()
        let limit = try Self.pageSize(input.query.limit)
        let page = try await deviceCounts.tags(
            appID: appID, prefix: input.query.prefix, after: input.query.cursor, limit: limit)
        return .ok(
            .init(
                body: .json(
                    .init(
                        tags: page.tags.map { .init(tag: $0.tag, devices: .init($0.devices)) },
                        nextCursor: page.more ? page.tags.last?.tag : nil))))
    }

    // MARK: Helpers

    private func progress(_ text: String) async throws -> Components.Schemas.PushStatus {
        .init(try await pushProgress(text).progress)
    }

    /// The caller's push named by `text`, with its progress.
    private func pushProgress(_ text: String) async throws -> (id: UUID, progress: PushProgress) {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(text, "pushId")
        guard let progress = try await pushes.progress(id: id, appID: appID) else {
            throw APIError.notFound("push \(text)")
        }
        return (id, progress)
    }

    func pickWinner(_ input: Operations.PickWinner.Input) async throws -> Operations.PickWinner.Output {
        let appID = try Principal.requireApp()
        guard case .json(let request) = input.body else { throw APIError.badRequest("send the pick as JSON") }
        let current = try await pushProgress(input.path.pushId)
        guard let split = current.progress.push.definition.split, split.picksWinner else {
            throw APIError.conflict(
                "this push is no A/B test in winner mode; only such a push's winner can be picked",
                code: .notWinnerMode)
        }
        guard let variant = split.variants.firstIndex(where: { $0.name == request.variant }) else {
            throw APIError.invalid(
                "variant",
                "the push has no variant \(request.variant); it has \(split.variants.map(\.name).joined(separator: ", "))"
            )
        }
        if try await !claims.pickWinner(
            variant, pushID: current.id, appID: appID,
            audit: auditEntry(
                "push.winner_picked", appID: appID, target: current.id.lowercased, details: ["variant": request.variant]
            ))
        {
            throw APIError.conflict(
                "the push's winner is picked already, or the push is over; a winner is picked once",
                code: .winnerPicked)
        }
        logger.info("A/B test winner picked", metadata: ["push": "\(current.id)", "variant": "\(request.variant)"])
        return .ok(.init(body: .json(try await progress(input.path.pushId))))
    }

    private func setPaused(_ paused: Bool, _ text: String) async throws -> Components.Schemas.PushStatus {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(text, "pushId")
        if try await !claims.setPaused(
            paused, pushID: id, appID: appID,
            audit: auditEntry(paused ? "push.paused" : "push.resumed", appID: appID, target: id.lowercased))
        {
            let current = try await progress(text)
            throw APIError.conflict(
                "the push is \(current.state.rawValue); only scheduled pushes and fan-outs in progress can be paused or resumed",
                code: .pushNotRunning)
        }
        return try await progress(text)
    }

    /// The collapse id the caller's push gets: its own, or the one of the push it replaces; nil
    /// leaves it to ``NewPush/defaultCollapseID(pushID:)``.
    /// `request` checked and composed as the app's push: a stored template's notification and a
    /// saved segment's filter copied in, placeholders without a default guaranteed by the audience.
    func composedPush(_ request: Components.Schemas.PushRequest, appID: UUID) async throws -> PushComposer.Composed {
        var composed = try PushComposer().compose(try await withTemplate(request, appID: appID))
        try await withSegment(&composed.audience, appID: appID)
        try PushComposer.requireValues(of: composed.personalization, in: composed.audience)
        return composed
    }

    private func collapseID(for composed: PushComposer.Composed, appID: UUID) async throws -> String? {
        guard let replaces = composed.replaces else { return composed.collapseID }
        guard let original = try await pushes.push(id: replaces, appID: appID) else {
            throw APIError.invalid("options.replaces", "options.replaces names no push of this app")
        }
        let inherited = original.definition.collapseID
        if let own = composed.collapseID, own != inherited {
            throw APIError.invalid(
                "options.collapse_id",
                "a replacing push takes the collapse id of the push it replaces (\(inherited)); leave collapse_id out")
        }
        return inherited
    }

    private func announcement(
        _ kind: Herald_V1_PushEvent.Kind, pushID: UUID, appID: UUID,
        traceparent: String? = RequestIdentity.trace?.child().traceparent
    ) throws -> PushRepository.OutboxDraft {
        try PushRepository.OutboxDraft.pushEvent(
            kind, pushID: pushID, appID: appID, topic: settings.pushesTopic, traceparent: traceparent)
    }
}

/// A push's progress as Server-Sent Events, from ``PushProgressHub``: `progress` events with
/// the push's status JSON when it changes, keep-alive comments, and the end after the push
/// completed or was canceled, or the stream's lifetime passed.
struct PushProgressEvents: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let events: AsyncStream<PushProgressHub.Event>
    /// How often the stream asks `keyIsLive`.
    let checkEvery: Duration
    /// Whether the key the stream was opened with is still live; false ends the stream.
    let keyIsLive: @Sendable () async -> Bool

    struct AsyncIterator: AsyncIteratorProtocol {
        var events: AsyncStream<PushProgressHub.Event>.AsyncIterator
        let checkEvery: Duration
        let keyIsLive: @Sendable () async -> Bool
        var checked = ContinuousClock.now

        mutating func next() async -> ArraySlice<UInt8>? {
            let event = await events.next()
            if event != nil, ContinuousClock.now - checked >= checkEvery {
                checked = .now
                guard await keyIsLive() else { return nil }
            }
            switch event {
            case .progress(let json)?:
                return ArraySlice(Array("event: progress\ndata: ".utf8) + json + Array("\n\n".utf8))
            case .keepAlive?: return ArraySlice(": keep-alive\n\n".utf8)
            case nil: return nil
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(events: events.makeAsyncIterator(), checkEvery: checkEvery, keyIsLive: keyIsLive)
    }
}

extension Components.Schemas.VariantCounters {
    init(_ counters: VariantCounters) {
        self.init(
            targeted: counters.targeted, accepted: counters.accepted, deliveredOnline: counters.deliveredOnline,
            rejected: counters.rejected, expired: counters.expired, canceled: counters.canceled,
            skipped: counters.skipped)
    }
}
