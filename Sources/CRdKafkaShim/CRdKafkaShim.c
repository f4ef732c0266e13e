#include "CRdKafkaShim.h"

rd_kafka_error_t *herald_kafka_produce(rd_kafka_t *rk,
                                       const char *topic,
                                       int32_t partition,
                                       const void *key, size_t key_length,
                                       const void *value, size_t value_length,
                                       void *opaque) {
    rd_kafka_vu_t vus[6];
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

    vus[count].vtype = RD_KAFKA_VTYPE_OPAQUE;
    vus[count].u.ptr = opaque;
    count++;

    return rd_kafka_produceva(rk, vus, count);
}
