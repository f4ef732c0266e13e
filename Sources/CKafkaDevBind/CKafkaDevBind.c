#define _GNU_SOURCE
#include "CKafkaDevBind.h"

#include <dlfcn.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>

static atomic_int base_port = 0;
static atomic_int rewritten = 0;

void herald_dev_bind_set_base_port(int port) {
    atomic_store(&base_port, port);
    atomic_store(&rewritten, 0);
}

int herald_dev_bind_rewritten_count(void) {
    return atomic_load(&rewritten);
}

typedef int (*bind_function)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *address, socklen_t length) {
    static bind_function libc_bind = NULL;
    if (libc_bind == NULL) {
        libc_bind = (bind_function)dlsym(RTLD_NEXT, "bind");
    }
    int base = atomic_load(&base_port);
    if (base > 0 && address != NULL && address->sa_family == AF_INET &&
        length >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *requested = (const struct sockaddr_in *)address;
        if (requested->sin_port == 0) {
            struct sockaddr_in fixed;
            memcpy(&fixed, requested, sizeof(fixed));
            int index = atomic_fetch_add(&rewritten, 1);
            fixed.sin_port = htons((uint16_t)(base + index));
            int reuse = 1;
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
            return libc_bind(fd, (const struct sockaddr *)&fixed, sizeof(fixed));
        }
    }
    return libc_bind(fd, address, length);
}
