#include "CRdKafkaShim.h"

rd_kafka_error_t *herald_kafka_produce(rd_kafka_t *rk,
                                       const char *topic,
                                       int32_t partition,
                                       const void *key, size_t key_length,
                                       const void *value, size_t value_length,
                                       const char *const *header_names,
                                       const void *const *header_values,
                                       const size_t *header_lengths,
                                       size_t header_count,
                                       void *opaque) {
    if (header_count > HERALD_KAFKA_MAX_HEADERS) {
        return rd_kafka_error_new(RD_KAFKA_RESP_ERR__INVALID_ARG, "more than %d headers",
                                  HERALD_KAFKA_MAX_HEADERS);
    }
    rd_kafka_vu_t vus[6 + HERALD_KAFKA_MAX_HEADERS];
    size_t count = 0;

    vus[count].vtype = RD_KAFKA_VTYPE_TOPIC;
    vus[count].u.cstr = topic;
    count++;

    vus[count].vtype = RD_KAFKA_VTYPE_PARTITION;
    vus[count].u.i32 = partition;
    count++;

    vus[count].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vus[count].u.i = RD_KAFKA_MSG_F_COPY;
    count++;

    if (key != NULL) {
        vus[count].vtype = RD_KAFKA_VTYPE_KEY;
        vus[count].u.mem.ptr = (void *)key;
        vus[count].u.mem.size = key_length;
        count++;
    }

    vus[count].vtype = RD_KAFKA_VTYPE_VALUE;
    vus[count].u.mem.ptr = (void *)value;
    vus[count].u.mem.size = value_length;
    count++;

    for (size_t index = 0; index < header_count; index++) {
        vus[count].vtype = RD_KAFKA_VTYPE_HEADER;
        vus[count].u.header.name = header_names[index];
        vus[count].u.header.val = header_values[index];
        vus[count].u.header.size = (ssize_t)header_lengths[index];
        count++;
    }

    vus[count].vtype = RD_KAFKA_VTYPE_OPAQUE;
    vus[count].u.ptr = opaque;
    count++;

    return rd_kafka_produceva(rk, vus, count);
}

size_t herald_kafka_header_count(const rd_kafka_message_t *message) {
    rd_kafka_headers_t *headers = NULL;
    if (rd_kafka_message_headers(message, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR || headers == NULL) {
        return 0;
    }
    return rd_kafka_header_cnt(headers);
}

int herald_kafka_header_at(const rd_kafka_message_t *message, size_t index,
                           const char **name, const void **value, size_t *length) {
    rd_kafka_headers_t *headers = NULL;
    if (rd_kafka_message_headers(message, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR || headers == NULL) {
        return 0;
    }
    return rd_kafka_header_get_all(headers, index, name, value, length) == RD_KAFKA_RESP_ERR_NO_ERROR;
}
