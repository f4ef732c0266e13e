#!/usr/bin/env bash
# The device-import benchmark (`make bench-import`): herald-api's bulk import of DEVICES devices
# (tags, aliases, locales, time zones), half of them updating devices the app already has, into an
# app that already holds DEVICES devices — as NDJSON and as CSV — against a reference done in the
# same run on the same PostgreSQL: psql COPYing the same rows into a staging table and merging them
# into `devices` with one INSERT … ON CONFLICT … DO UPDATE. Prints each time, devices/s, and the
# ratio reference time / Herald's time (target ≥ 0.25); the last line is JSON.
#
#   [PROFILE=1] Benchmarks/DeviceImport/run.sh BIN_DIR [DEVICES]
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=$(cd "${1:-.build/release}" && pwd)
devices=${2:-1000000}
herald=$bin/herald
export HERALD_DEV_DIR=$(pwd)/.local/bench-import
export HERALD_LOG_LEVEL=${HERALD_LOG_LEVEL:-warning}
data=$HERALD_DEV_DIR/data
rm -rf "$data"

"$herald" dev down >/dev/null 2>&1 || true
"$herald" dev up --senders 1 --api-port 0 --bin-dir "$bin" >/dev/null
trap 'cp "$HERALD_DEV_DIR/logs/postgres.log" "$(dirname "$HERALD_DEV_DIR")/bench-import-postgres.log" 2>/dev/null; "$herald" dev down >/dev/null' EXIT
eval "$("$herald" dev env)"
mkdir -p "$data"
eval "$(python3 - "$HERALD_DEV_DIR/stack.json" <<'PY'
import json, shlex, sys
p = json.load(open(sys.argv[1]))["postgres"]
print(f"export PGHOST=127.0.0.1 PGPORT={p['port']} PGUSER={shlex.quote(p['user'])} "
      f"PGPASSWORD={shlex.quote(p['password'])} PGDATABASE={shlex.quote(p['database'])}")
PY
)"
echo "stack up in $HERALD_DEV_DIR; $devices devices to import into apps of $devices"
# PROFILE=1: PostgreSQL logs every statement over 100 ms with its duration (kept in
# .local/bench-import-postgres.log).
if [ "${PROFILE:-0}" = 1 ]; then
  psql -q -c "ALTER SYSTEM SET log_min_duration_statement = 100" -c "SELECT pg_reload_conf()" >/dev/null
fi

# Three apps in the same state: the reference's, NDJSON's and CSV's.
declare -A app key
for name in reference ndjson csv; do
  created=$("$herald" app create --name "import $name" --bundle-id "com.example.import.$name" --json)
  app[$name]=$(echo "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["app"]["id"])')
  key[$name]=$(echo "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["server_key"]["key"])')
done

# The import: devices N/2 … 3N/2 - 1 (the first half already registered), every one with two tags,
# a locale and a time zone, every fourth with an alias.
python3 - "$devices" "$data" <<'PY'
import json, sys
n, data = int(sys.argv[1]), sys.argv[2]
with open(f"{data}/import.ndjson", "w") as ndjson, open(f"{data}/import.csv", "w") as csv:
    csv.write("token,environment,alias,tags,locale,time_zone\n")
    for i in range(n // 2, n // 2 + n):
        token = f"{i:064x}"
        alias = f"user-{i}" if i % 4 == 0 else None
        tags = [f"t{i % 100}", "imported"]
        line = {"token": token, "environment": "production", "tags": tags, "locale": "de_DE", "time_zone": "Europe/Berlin"}
        if alias:
            line["alias"] = alias
        ndjson.write(json.dumps(line, separators=(",", ":")) + "\n")
        csv.write(f"{token},production,{alias or ''},{'|'.join(tags)},de_DE,Europe/Berlin\n")
PY
ls -la "$data" | tail -2

# What each app holds before: devices 0 … N - 1, two tags each, every fourth with an alias.
for name in reference ndjson csv; do
  psql -q -v ON_ERROR_STOP=1 <<SQL
INSERT INTO devices (app_id, token, environment, topic, alias, locale)
SELECT '${app[$name]}', decode(lpad(to_hex(i), 64, '0'), 'hex'), 'production', 'com.example.import.$name',
       CASE WHEN i % 4 = 0 THEN 'user-' || i END, 'en_US'
FROM generate_series(0, $devices - 1) AS i;
INSERT INTO device_tags (app_id, tag, device_id)
SELECT '${app[$name]}', tag, d.id FROM devices d, unnest(ARRAY['t' || (d.id % 100), 'preloaded']) AS tag
WHERE d.app_id = '${app[$name]}';
SQL
done
psql -q -c "VACUUM ANALYZE devices" -c "VACUUM ANALYZE device_tags"
echo "each app holds $devices devices"

now() { date +%s.%N; }

# The reference: psql COPY into a staging table, one merge.
start=$(now)
psql -q -v ON_ERROR_STOP=1 <<SQL
BEGIN;
CREATE TEMPORARY TABLE staging (token text, environment text, alias text, tags text, locale text, time_zone text) ON COMMIT DROP;
\copy staging FROM '$data/import.csv' WITH (FORMAT csv, HEADER true)
INSERT INTO devices (app_id, token, environment, topic, alias, locale, time_zone)
SELECT '${app[reference]}', decode(token, 'hex'), environment, 'com.example.import.reference', NULLIF(alias, ''), locale, time_zone
FROM staging
ON CONFLICT (app_id, token) DO UPDATE SET
    environment = EXCLUDED.environment, alias = COALESCE(EXCLUDED.alias, devices.alias),
    locale = COALESCE(EXCLUDED.locale, devices.locale), time_zone = COALESCE(EXCLUDED.time_zone, devices.time_zone),
    status = 'active', registered_at = now(), updated_at = now();
COMMIT;
SQL
reference=$(python3 -c "print($(now) - $start)")

import() { # name content-type file
  local start answer
  start=$(now)
  answer=$(curl -sS --max-time 3600 -X POST "$HERALD_API_URL/v1/devices/import" -H "Authorization: Bearer ${key[$1]}" \
    -H "Content-Type: $2" --data-binary "@$3")
  echo "$(python3 -c "print($(now) - $start)") $answer"
}
ndjson=$(import ndjson application/x-ndjson "$data/import.ndjson")
csv=$(import csv text/csv "$data/import.csv")

python3 - "$devices" "$reference" "$ndjson" "$csv" <<'PY'
import json, sys
devices, reference = int(sys.argv[1]), float(sys.argv[2])
runs = {}
for name, text in (("ndjson", sys.argv[3]), ("csv", sys.argv[4])):
    seconds, answer = text.split(" ", 1)
    result = json.loads(answer)
    if result.get("accepted") != devices:
        sys.exit(f"{name}: the import answered {answer}")
    runs[name] = float(seconds)
print(f"reference (psql COPY into staging + one merge): {reference:.1f} s = {devices / reference:,.0f} devices/s")
for name, seconds in runs.items():
    print(f"herald-api {name:6}: {seconds:.1f} s = {devices / seconds:,.0f} devices/s; "
          f"ratio {reference / seconds:.2f} (target ≥ 0.25: {'met' if reference / seconds >= 0.25 else 'NOT met'})")
print(json.dumps({"devices": devices, "reference_s": round(reference, 2),
                  **{f"{name}_s": round(s, 2) for name, s in runs.items()},
                  **{f"{name}_ratio": round(reference / s, 3) for name, s in runs.items()}}))
PY
