#ifndef HERALD_CRDKAFKA_SHIM_H
#define HERALD_CRDKAFKA_SHIM_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

/// The most headers one produced record may carry.
#define HERALD_KAFKA_MAX_HEADERS 8

/// Enqueues one message on a producer (librdkafka copies key, value and headers).
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
                                       const char *const *header_names,
                                       const void *const *header_values,
                                       const size_t *header_lengths,
                                       size_t header_count,
                                       void *opaque);

/// How many headers a consumed message has (0 when it has none).
size_t herald_kafka_header_count(const rd_kafka_message_t *message);

/// The header at `index` of a consumed message: its name (NUL-terminated) and value, both owned
/// by the message and valid until it is destroyed. @returns 1 when found, 0 otherwise.
int herald_kafka_header_at(const rd_kafka_message_t *message, size_t index,
                           const char **name, const void **value, size_t *length);

#endif
