#ifndef HERALD_CRDKAFKA_SHIM_H
#define HERALD_CRDKAFKA_SHIM_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

/// Enqueues one message on a producer (librdkafka copies key and value).
///
/// A thin wrapper over `rd_kafka_produceva`, whose tagged-union argument list is awkward from
/// Swift. `opaque` is handed back untouched in the delivery report of this message; on failure
/// librdkafka did not take it and the caller still owns it.
///
/// @returns NULL on success, else an error object the caller must destroy.
rd_kafka_error_t *herald_kafka_produce(rd_kafka_t *rk,
                                       const char *topic,
                                       int32_t partition,
                                       const void *key, size_t key_length,
                                       const void *value, size_t value_length,
                                       void *opaque);

#endif
