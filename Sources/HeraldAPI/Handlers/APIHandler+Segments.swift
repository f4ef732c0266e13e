import Foundation
import HeraldAPIContract
import HeraldDomain
import HeraldStore

/// Saved segments (docs/segments.md): named filters over the app's devices, for a server key.
extension APIHandler {
    func createSegment(_ input: Operations.CreateSegment.Input) async throws -> Operations.CreateSegment.Output {
        let appID = try Principal.requireApp()
        guard case .json(let body) = input.body else { throw APIError.badRequest("a JSON body is required") }
        try Self.checkNamedText("segment", name: body.name, description: body.description)
        let filter = try PushComposer.filter(body.filter, field: "filter")
        let id = UUID()
        let segment = try await naming(.segment) {
            try await segments.create(
                id: id, appID: appID, name: body.name, description: body.description, filter: filter,
                audit: auditEntry(
                    "segment.created", appID: appID, details: ["segment": id.lowercased, "name": body.name]))
        }
        return .created(.init(body: .json(try .init(segment))))
    }

    func listSegments(_ input: Operations.ListSegments.Input) async throws -> Operations.ListSegments.Output {
        let appID = try Principal.requireApp()
        return .ok(.init(body: .json(.init(segments: try await segments.segments(appID: appID).map { try .init($0) }))))
    }

    func getSegment(_ input: Operations.GetSegment.Input) async throws -> Operations.GetSegment.Output {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(input.path.segmentId, "segmentId")
        guard let segment = try await segments.segment(id: id, appID: appID) else { throw APIError.notFound("segment") }
        return .ok(.init(body: .json(try .init(segment))))
    }

    func updateSegment(_ input: Operations.UpdateSegment.Input) async throws -> Operations.UpdateSegment.Output {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(input.path.segmentId, "segmentId")
        guard case .json(let body) = input.body else { throw APIError.badRequest("a JSON body is required") }
        guard body.name != nil || body.description != nil || body.filter != nil else {
            throw APIError.badRequest("name what to change: name, description or filter")
        }
        try Self.checkNamedText("segment", name: body.name, description: body.description)
        let filter = try body.filter.map { filter throws(APIError) in try PushComposer.filter(filter, field: "filter") }
        guard
            let segment = try await naming(
                .segment,
                {
                    try await segments.update(
                        id: id, appID: appID, name: body.name, description: body.description, filter: filter,
                        audit: auditEntry("segment.updated", appID: appID, details: Self.changed(id, name: body.name)))
                })
        else { throw APIError.notFound("segment") }
        return .ok(.init(body: .json(try .init(segment))))
    }

    func deleteSegment(_ input: Operations.DeleteSegment.Input) async throws -> Operations.DeleteSegment.Output {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(input.path.segmentId, "segmentId")
        guard
            try await segments.delete(
                id: id, appID: appID,
                audit: auditEntry("segment.deleted", appID: appID, details: ["segment": id.lowercased]))
        else { throw APIError.notFound("segment") }
        return .noContent(.init())
    }

    /// A push naming a saved segment gets the segment's filter (ANDed with its own), copied now:
    /// changing or deleting the segment later changes no accepted push.
    func withSegment(_ audience: inout PushAudience, appID: UUID) async throws {
        guard let id = audience.segment else { return }
        guard let segment = try await segments.segment(id: id, appID: appID) else {
            throw APIError.invalid("audience.segment_id", "the app has no segment \(id.lowercased)")
        }
        audience.filter = audience.filter.map { .and([segment.filter, $0]) } ?? segment.filter
        let total = audience.filter?.conditionCount ?? 0
        guard total <= AudienceFilter.maximumConditions else {
            throw APIError.invalid(
                "audience.filter",
                "the segment's filter and this one hold \(total) conditions together; at most \(AudienceFilter.maximumConditions)"
            )
        }
    }

    /// Runs a write of a named resource, answering 409 (`kind.nameTaken`) when the app has a
    /// `kind` of that name already, and 409 (`kind.limitReached`) when a create finds the app at
    /// its limit of them.
    func naming<Result>(_ kind: NamedResource, _ write: () async throws -> Result) async throws -> Result {
        do {
            return try await write()
        } catch is NameTaken {
            throw APIError.conflict("the app has a \(kind.rawValue) of this name already", code: kind.nameTaken)
        } catch let reached as PerAppLimitReached {
            throw APIError.conflict(
                "the app has \(reached.limit) \(kind.plural) already; delete one first", code: kind.limitReached)
        }
    }

    /// A segment's or template's name and description.
    static func checkNamedText(_ kind: String, name: String?, description: String?) throws(APIError) {
        if let name, !(1...100).contains(name.storedLength) || name.allSatisfy(\.isWhitespace) {
            throw APIError.invalid("name", "a \(kind)'s name is 1 to 100 characters, not only spaces")
        }
        if let description, description.storedLength > 500 {
            throw APIError.invalid("description", "a description is at most 500 characters")
        }
    }
}

extension Components.Schemas.Segment {
    init(_ segment: SegmentRecord) throws {
        self.init(
            id: segment.id.lowercased, name: segment.name, description: segment.description,
            filter: try segment.filter.json.decoded(as: Components.Schemas.DeviceFilter.self),
            createdAt: segment.createdAt, updatedAt: segment.updatedAt)
    }
}
