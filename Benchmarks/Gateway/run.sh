#!/usr/bin/env bash
# The gateway benchmark (`make bench-gateway`): on a `herald dev` stack with one herald-gateway,
# CONNECTIONS simulated phones (Benchmarks/Gateway/phones.py, TLS from many 127.1.x.y addresses)
# hold their connections; the gateway's memory per connection and CPU per delivered message
# (three broadcasts of one push to every connection, acknowledged) are measured against Debian's
# mosquitto holding the same number of MQTT-over-TLS connections from the same tool, with the same
# certificate, in the same run; then single-device pushes through the whole stack, from the Open
# API's 202 to the phone's receipt, online against APNs (apns-sim), on HeraldKit's phones
# (`herald dev phones`: the same devices connected, others in the background on APNs), once with
# apns-sim answering at once and once per Apple round trip in GATEWAY_APPLE_ROUND_TRIPS (fixed
# milliseconds, comma-separated; default 0,20) set as apns-sim's latency fault. GATEWAY_ROUNDS
# (default 3) is how many broadcast rounds each server gets (more, to profile a server under them).
# Benchmarks/Gateway/bench.py prints the figures; the last line is JSON.
#
#   Benchmarks/Gateway/run.sh BIN_DIR [CONNECTIONS]
#
# CONNECTIONS defaults to 18,000: a process on this machine may hold at most 20,000 descriptors
# (`ulimit -Hn`; the container does not allow raising it), and each server holds one a connection.
# Where the limit allows, pass 100000.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=$(cd "${1:-.build/release}" && pwd)
connections=${2:-18000}
herald=$bin/herald
export HERALD_DEV_DIR=$(pwd)/.local/bench-gateway
export HERALD_LOG_LEVEL=${HERALD_LOG_LEVEL:-warning}
limit=$(ulimit -Hn)
if [ "$limit" != unlimited ] && [ "$connections" -gt $((limit - 1000)) ]; then
  echo "a process here may hold $limit descriptors: at most $((limit - 1000)) connections per server" >&2
  exit 2
fi
ulimit -n "$limit"
command -v mosquitto >/dev/null || { echo "mosquitto not found: apt-get install mosquitto (scripts/install-dependencies.sh test)" >&2; exit 1; }
scripts/python-venv.sh .local/venv Tests/ExternalClients/requirements.txt "protobuf, grpcio-tools" >/dev/null

"$herald" dev down >/dev/null 2>&1 || true
# HeraldKit's phones (the latency phase) all connect from 127.0.0.1, as clients behind a proxy
# would: the gateway's per-source connection rate is off here, as the dev stack turns it off
# behind its own proxy (phones.py spreads its connections over 127.1.x.y and never meets it).
export HERALD_GATEWAY_CONNECTIONS_PER_SECOND=0
"$herald" dev up --senders 2 --gateways 1 --api-port 0 --gateway-port 0 --bin-dir "$bin" >/dev/null
trap '"$herald" dev down >/dev/null' EXIT
eval "$("$herald" dev env)"
echo "stack up in $HERALD_DEV_DIR (one gateway at $HERALD_DEV_GATEWAY)"

"$herald" app create --name "gateway benchmark" --bundle-id com.example.gateway --save >/dev/null
"$herald" app credentials --dev-stack-key >/dev/null
# Devices without aliases (a device on an alias needs its signature in the hello): 1 in 10 has one.
"$herald" dev devices --count $((connections * 12 / 10 + 2000)) --unregistered-percent 0 --bad-percent 0 \
  --out "$HERALD_DEV_DIR/all.ndjson" >/dev/null
"$herald" devices import "$HERALD_DEV_DIR/all.ndjson" >/dev/null
"$herald" dev devices --register "$HERALD_DEV_DIR/all.ndjson" --topic com.example.gateway >/dev/null
key=$("$herald" app keys create --kind client --name phones --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')
server_key=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["api_key"])' "$HERALD_CLI_CONFIG")

# The devices' registration ids, from the stack's database.
python3 - "$HERALD_DEV_DIR" "$connections" <<'PY'
import json, os, subprocess, sys
directory, wanted = sys.argv[1], int(sys.argv[2])
stack = json.load(open(os.path.join(directory, "stack.json")))
postgres = stack["postgres"]
rows = subprocess.run(
    ["psql", "-h", "127.0.0.1", "-p", str(postgres["port"]), "-U", postgres["user"], "-d", postgres["database"],
     "-At", "-F", " ", "-c", "SELECT id, encode(token, 'hex') FROM devices WHERE alias IS NULL ORDER BY id"],
    env={**os.environ, "PGPASSWORD": postgres["password"]}, capture_output=True, text=True, check=True).stdout.split("\n")
devices = [{"id": int(row.split()[0]), "token": row.split()[1], "environment": "sandbox"} for row in rows if row]
with open(os.path.join(directory, "online.ndjson"), "w") as out:
    for device in devices[:wanted]:
        out.write(json.dumps(device) + "\n")
with open(os.path.join(directory, "offline.ndjson"), "w") as out:
    for device in devices[wanted:wanted + 1000]:
        out.write(json.dumps(device) + "\n")
print(f"{min(wanted, len(devices))} devices to connect, {len(devices[wanted:wanted + 1000])} that stay away")
PY

# mosquitto with the gateway's certificate: a TLS listener for the clients, a plain one on
# loopback for the publisher (as the gateway's delivery port is plain HTTP inside a cluster).
mqtt_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
publisher_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$HERALD_DEV_DIR/mosquitto.conf" <<EOF
per_listener_settings false
allow_anonymous true
max_connections -1
persistence false
user root
log_dest stderr
log_type error
log_type warning
listener $mqtt_port 127.0.0.1
certfile $HERALD_DEV_DIR/gateway.crt
keyfile $HERALD_DEV_DIR/gateway.key
listener $publisher_port 127.0.0.1
EOF

stack=$HERALD_DEV_DIR/stack.json
gateway_pid=$(python3 -c 'import json, sys; print(next(p["pid"] for p in json.load(open(sys.argv[1]))["processes"] if p["name"] == "herald-gateway"))' "$stack")
delivery=$(python3 -c 'import json, sys; p = next(p for p in json.load(open(sys.argv[1]))["processes"] if p["name"] == "herald-gateway"); print(p["environment"]["HERALD_GATEWAY_DELIVERY_ADDRESS"])' "$stack")
token=$(python3 -c 'import hashlib, hmac, json, sys; print(hmac.new(json.load(open(sys.argv[1]))["masterKey"].encode(), b"herald-gateway-deliveries-v1", hashlib.sha256).hexdigest())' "$stack")

.local/venv/bin/python Benchmarks/Gateway/bench.py --python .local/venv/bin/python \
  --devices "$HERALD_DEV_DIR/online.ndjson" --offline "$HERALD_DEV_DIR/offline.ndjson" \
  --key "$key" --server-key "$server_key" --api "$HERALD_API_URL" \
  --address "$HERALD_DEV_GATEWAY" --ca "$HERALD_DEV_GATEWAY_CA" \
  --delivery "$delivery" --delivery-token "$token" --gateway-pid "$gateway_pid" \
  --mosquitto "$HERALD_DEV_DIR/mosquitto.conf" --mqtt-port "$mqtt_port" --mqtt-publisher-port "$publisher_port" \
  --sim-admin "$HERALD_DEV_APNS_SIM_ADMIN" --herald "$herald" --state "$HERALD_DEV_DIR/bench" \
  --apple-round-trips "${GATEWAY_APPLE_ROUND_TRIPS:-0,20}" --rounds "${GATEWAY_ROUNDS:-3}"
