// libpq, as installed by Debian's libpq-dev. Only HeraldPostgresCopy imports this module: Herald
// talks to PostgreSQL through postgres-nio everywhere except where it streams an audience with
// COPY, which postgres-nio cannot do.
#include <libpq-fe.h>
