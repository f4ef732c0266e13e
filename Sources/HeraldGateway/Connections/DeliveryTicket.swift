/// What the gateway attaches to each push it writes to a connection: which push and which
/// device. The session hands it back when the push is acknowledged (`delivered_online`) or must
/// go through APNs instead.
struct DeliveryTicket: Sendable {
    var pushID: [UInt8]
    var deviceID: Int64
}
