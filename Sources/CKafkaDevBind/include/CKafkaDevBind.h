#ifndef HERALD_CKAFKADEVBIND_H
#define HERALD_CKAFKADEVBIND_H

/// Makes the development broker listen on fixed ports.
///
/// librdkafka's mock cluster binds each broker to 127.0.0.1 on a port the kernel picks, and
/// librdkafka 2.0.2 has no setting to choose it. This target defines `bind()` inside the
/// herald-kafka-dev executable: once a base port is set, every IPv4 bind to port 0 is given the
/// next port (base, base+1, ...) in the order the mock creates its brokers, with SO_REUSEADDR so
/// a restarted broker can take its ports back at once. Every other bind goes to libc unchanged.
///
/// Call before creating the mock cluster; 0 turns the rewrite off (the default).
void herald_dev_bind_set_base_port(int port);

/// The number of binds rewritten so far (one per mock broker).
int herald_dev_bind_rewritten_count(void);

#endif
