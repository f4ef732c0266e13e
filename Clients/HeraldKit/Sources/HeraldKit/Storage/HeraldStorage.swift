import Foundation

/// Where the client keeps what must outlive a launch: the registration record, the push ids
/// shown, the engagement events not sent. Small values by name.
public protocol HeraldStorage: Sendable {
    func load<Value: Decodable>(_ type: Value.Type, named name: String) -> Value?
    func save<Value: Encodable>(_ value: Value, named name: String) throws
}

/// A folder of JSON files, one per name, each written atomically (a crash mid-write leaves the
/// old file). On iOS give it a folder in the app group's container so the notification service
/// extension reads the same files.
public struct FileStorage: HeraldStorage {
    public let directory: URL

    /// - Throws: when the folder cannot be created.
    public init(directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    public func load<Value: Decodable>(_ type: Value.Type, named name: String) -> Value? {
        guard let data = try? Data(contentsOf: url(name)) else { return nil }
        return try? Self.decoder.decode(type, from: data)
    }

    public func save<Value: Encodable>(_ value: Value, named name: String) throws {
        try Self.encoder.encode(value).write(to: url(name), options: .atomic)
    }

    private func url(_ name: String) -> URL { directory.appendingPathComponent("\(name).json") }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}
