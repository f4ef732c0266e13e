// libnghttp2, as installed by Debian's libnghttp2-dev. Only Herald's HTTP/2 engine imports this module.
#include <nghttp2/nghttp2.h>
