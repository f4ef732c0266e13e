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
