import Foundation

/// The frames of Schemas/gateway/gateway.proto under the names Herald's code reads them by (the
/// generated types carry the protobuf package's prefix).
public typealias GatewayFrame = Herald_Gateway_V1_Frame
public typealias GatewayHello = Herald_Gateway_V1_Hello
public typealias GatewayWelcome = Herald_Gateway_V1_Welcome
public typealias GatewayPing = Herald_Gateway_V1_Ping
public typealias GatewayPong = Herald_Gateway_V1_Pong
public typealias GatewayPush = Herald_Gateway_V1_Push
public typealias GatewayAck = Herald_Gateway_V1_Ack
public typealias GatewayRevoke = Herald_Gateway_V1_Revoke
public typealias GatewayGoaway = Herald_Gateway_V1_Goaway
public typealias GatewayError = Herald_Gateway_V1_Error

/// Herald's internal deliveries (Schemas/gateway/deliveries.proto): a sender to a gateway.
public typealias GatewayDeliveries = Herald_Gateway_Internal_V1_Deliveries
public typealias GatewayDelivery = Herald_Gateway_Internal_V1_Delivery
public typealias GatewayDeliveryResults = Herald_Gateway_Internal_V1_DeliveryResults

extension UUID {
    /// The push id of a `Push` or `Revoke` frame: 16 bytes in RFC 4122 order (docs/gateway.md);
    /// nil for any other length.
    public init?(gatewayBytes bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        let b = Array(bytes)
        self.init(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }
}
