import Dispatch
import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldPostgresCopy
import HeraldRecords
import Synchronization

/// The pages of one audience read by `COPY`, from ``AudienceRepository/stream(_:after:pageSize:)``.
///
/// A thread of its own holds the libpq connection and reads rows (columns: id, token,
/// environment, topic), packing them into ``AudiencePage``s without an allocation per row. It
/// stays at most ``pagesAhead`` pages ahead of the reader, then waits: the buffer is bounded.
/// Iterate it once.
public struct AudienceStream: AsyncSequence, Sendable {
    public typealias Element = AudiencePage
    /// Pages read but not yet taken, at most.
    public static let pagesAhead = 2

    private let pages: AsyncThrowingStream<AudiencePage, any Error>
    private let lifetime: Lifetime

    /// Held by the stream and its iterator, not by the thread: when the reader lets go of both
    /// (it finished, stopped early or threw), the thread stops and the connection closes.
    final class Lifetime: Sendable {
        let control: Control
        init(_ control: Control) { self.control = control }
        deinit { control.stop() }
    }

    /// Shared by the reading thread and the iterator.
    final class Control: Sendable {
        let stopped = Atomic<Bool>(false)
        /// One permit per page the thread may hand over before the reader takes one. Made with
        /// no permit and given them after: libdispatch traps when a semaphore is freed holding
        /// fewer permits than it was made with, which is how a stream closed early (a pause, a
        /// fan-out holding for its outcomes) leaves it.
        let room: DispatchSemaphore = {
            let room = DispatchSemaphore(value: 0)
            for _ in 0..<AudienceStream.pagesAhead { room.signal() }
            return room
        }()
        let connection = Mutex<PostgresCopyConnection?>(nil)

        func stop() {
            stopped.store(true, ordering: .releasing)
            room.signal()
            connection.withLock { $0?.cancel() }
        }
    }

    init(settings: PostgresCopyConnection.Settings?, query: String, pageSize: Int, valuesPerDevice: Int = 0) {
        let control = Control()
        let (pages, continuation) = AsyncThrowingStream.makeStream(of: AudiencePage.self)
        self.pages = pages
        self.lifetime = Lifetime(control)
        guard let settings else {
            continuation.finish(throwing: AudienceStreamUnavailable())
            return
        }
        let thread = Thread {
            do {
                let connection = try PostgresCopyConnection(settings)
                control.connection.withLock { $0 = connection }
                var reader = PageAssembler(pageSize: pageSize, valuesPerDevice: valuesPerDevice)
                let copied = Result {
                    try connection.copyOut(query: query) { row in
                        guard !control.stopped.load(ordering: .acquiring) else { return .stop }
                        guard let page = try reader.add(row) else { return .more }
                        control.room.wait()
                        guard !control.stopped.load(ordering: .acquiring) else { return .stop }
                        continuation.yield(page)
                        return .more
                    }
                }
                control.connection.withLock { $0 = nil }
                try copied.get()
                if let last = reader.finish(), !control.stopped.load(ordering: .acquiring) {
                    continuation.yield(last)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        thread.name = "herald-audience-copy"
        thread.start()
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<AudiencePage, any Error>.AsyncIterator
        let lifetime: Lifetime

        public mutating func next() async throws -> AudiencePage? {
            let page = try await base.next()
            if page != nil { lifetime.control.room.signal() }
            return page
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: pages.makeAsyncIterator(), lifetime: lifetime)
    }
}

/// Packs COPY rows (id bigint, token bytea, environment text, topic text, then a templated push's
/// personalization values as text) into pages.
struct PageAssembler {
    let pageSize: Int
    let valuesPerDevice: Int
    /// The page being filled; it starts with the groups of the page before, so a group keeps
    /// its index from page to page.
    private var page: AudiencePage
    /// The previous row's environment and topic bytes and their group: consecutive rows almost
    /// always share them, so most rows cost a byte comparison, not a String.
    private var lastEnvironment: [UInt8] = []
    private var lastTopic: [UInt8] = []
    private var lastGroup: UInt16?

    init(pageSize: Int, valuesPerDevice: Int = 0) {
        self.pageSize = pageSize
        self.valuesPerDevice = valuesPerDevice
        page = Self.emptyPage(pageSize, groups: [], valuesPerDevice: valuesPerDevice)
    }

    private static func emptyPage(_ size: Int, groups: [AudienceGroup], valuesPerDevice: Int) -> AudiencePage {
        var page = AudiencePage(
            devices: DeviceTokens(reservingCapacity: size, valuesPerDevice: valuesPerDevice), groups: groups)
        page.groupIndexes.reserveCapacity(size)
        return page
    }

    /// Adds `row`; returns a page when one is full.
    mutating func add(_ row: BinaryCopyRow) throws -> AudiencePage? {
        guard row.count == 4 + valuesPerDevice, let id = row.int64(0), let token = row.field(1),
            let environment = row.field(2), let topic = row.field(3)
        else {
            throw PostgresCopyError(
                "an audience row is not (id, token, environment, topic) and \(valuesPerDevice) personalization values")
        }
        let group: UInt16
        if let lastGroup, Self.same(environment, lastEnvironment), Self.same(topic, lastTopic) {
            group = lastGroup
        } else {
            lastEnvironment = Array(environment)
            lastTopic = Array(topic)
            group = page.group(
                AudienceGroup(
                    environment: APNsEnvironment(rawValue: String(decoding: environment, as: UTF8.self)) ?? .production,
                    topic: String(decoding: topic, as: UTF8.self)))
            lastGroup = group
        }
        page.append(deviceID: id, token: token, group: group)
        for field in 0..<valuesPerDevice { page.devices.appendValue(row.field(4 + field)) }
        guard page.count >= pageSize else { return nil }
        return finish()
    }

    /// Whether `field` holds the bytes of `last`, by one `memcmp` (the generic `elementsEqual`
    /// walked both a byte at a time: 5 % of the center's CPU in a templated fan-out).
    private static func same(_ field: UnsafeRawBufferPointer, _ last: [UInt8]) -> Bool {
        guard field.count == last.count else { return false }
        guard let start = field.baseAddress, !last.isEmpty else { return true }
        return last.withUnsafeBytes { memcmp(start, $0.baseAddress!, field.count) == 0 }
    }

    /// The page being filled, if it holds any device; the next starts empty.
    mutating func finish() -> AudiencePage? {
        guard !page.isEmpty else { return nil }
        let full = page
        page = Self.emptyPage(pageSize, groups: full.groups, valuesPerDevice: valuesPerDevice)
        return full
    }
}

/// ``AudienceRepository/stream(_:after:pageSize:)`` was called on a repository made without
/// PostgreSQL settings.
public struct AudienceStreamUnavailable: Error, CustomStringConvertible {
    public var description: String {
        "this AudienceRepository has no PostgreSQL settings for a COPY connection; pass postgres: when making it"
    }
}
