// librdkafka, as installed by Debian's librdkafka-dev. Only HeraldKafka imports this module.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
