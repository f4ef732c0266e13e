# Sourced by the scripts that test a live herald-api (the contract fuzzing, the abuse suite): makes
# the Python virtualenv they share and starts herald-api on a free port, on the PostgreSQL that
# scripts/with-infrastructure.sh runs.
#   prepare_venv                      .local/venv-contract from Tests/Contract/requirements.txt
#   free_port                         prints a free loopback port
#   start_api BUILD_DIR [VAR=VALUE…]  sets $base, $admin, $api_log; herald-api stops at exit
#   stop_api                          stops it (a script with an EXIT trap of its own calls it there)
venv=.local/venv-contract
requirements=Tests/Contract/requirements.txt

prepare_venv() {
  scripts/python-venv.sh "$venv" "$requirements" "schemathesis, requests, PyYAML" || exit 1
}

# A free port below the kernel's ephemeral range, so no outgoing connection's source port takes it
# before the server binds it (as `herald dev up` picks its ports).
free_port() {
  python3 - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(500):
    port = random.randrange(10000, max(low, 11000))
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
        print(port)
        break
    except OSError:
        pass
PY
}

start_api() {
  local build_dir=$1; shift
  local port
  port=$(free_port)
  admin="test-admin-$(head -c 32 /dev/urandom | base64 | tr -d "/+=")"
  api_log=$(mktemp)
  env HERALD_ADMIN_TOKEN="$admin" HERALD_MASTER_KEY="${HERALD_MASTER_KEY:?run it through scripts/with-infrastructure.sh}" \
    HERALD_API_PORT="$port" HERALD_API_RATE_LIMIT_PER_SECOND=100000 HERALD_API_RATE_LIMIT_BURST=100000 \
    HERALD_API_CLIENT_RATE_LIMIT_PER_SECOND=100000 HERALD_API_CLIENT_RATE_LIMIT_BURST=100000 \
    HERALD_LOG_LEVEL="${HERALD_LOG_LEVEL:-warning}" "$@" "$build_dir/herald-api" >"$api_log" 2>&1 &
  api_pid=$!
  trap stop_api EXIT
  base=http://127.0.0.1:$port
  for _ in $(seq 1 100); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf "$base/healthz" >/dev/null || { echo "herald-api did not start:" >&2; cat "$api_log" >&2; exit 1; }
}

stop_api() {
  kill "$api_pid" 2>/dev/null
  wait "$api_pid" 2>/dev/null
  rm -f "$api_log"
}
