import HeraldAPNsVocabulary
import NIOCore

extension APNsReason {
    /// `{"reason":"…"}`, made once per reason.
    var body: ByteBuffer { Self.bodies[self] ?? ByteBuffer(string: #"{"reason":"\#(description)"}"#) }

    private static let bodies: [APNsReason: ByteBuffer] = Dictionary(
        uniqueKeysWithValues: documented.map {
            ($0, ByteBuffer(string: #"{"reason":"\#($0.description)"}"#))
        })
}
