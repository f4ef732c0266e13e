# Shared by scripts/test-end-to-end.sh and scripts/test-scale-out.sh (sourced, not run): the
# trap that stops the stack, reading a push's status, waiting for it, diagnosing a stuck one,
# and psql on the stack's database. Expects $herald, $HERALD_DEV_DIR, $log_prefix, an array
# `failures` and a variable `current` (the test running).

log() { echo "[$log_prefix $(date +%H:%M:%S)] $*"; }
fail() { log "✘ $*"; failures+=("$current: $*"); }

# Stops the stack on exit, keeping its logs when a test failed (or E2E_KEEP_LOGS=1).
cleanup() {
  local status=$?
  if [ ${#failures[@]} -gt 0 ] || [ "${E2E_KEEP_LOGS:-0}" = 1 ]; then
    log "logs: kept in $HERALD_DEV_DIR/logs"
    "$herald" dev down --keep >/dev/null
  else
    "$herald" dev down >/dev/null
  fi
  exit $status
}
trap cleanup EXIT

# Whether every process of the stack is running, checked between tests (a test that stops one
# starts it again before it ends). A process that died is a failure of the test that just ran,
# with the runtime's crash report from its log (the "Fatal error" line and the crashed thread's
# frames); the caller stops there, since every later test would only wait out its time limits
# against a broken stack. The reports go to $HERALD_DEV_DIR/crashes.txt, printed again last by
# print_crashes (CI keeps only the end of the output).
stack_alive() {
  local dead; dead=$("$herald" dev status --json | python3 -c '
import json, sys
print(" ".join(p["name"] for p in map(json.loads, sys.stdin) if not p["alive"]))')
  [ -z "$dead" ] && return 0
  local name
  for name in $dead; do
    fail "$name is not running after this test"
    { echo "$name:"; crash_report "$HERALD_DEV_DIR/logs/$name.log"; } >>"$HERALD_DEV_DIR/crashes.txt"
  done
  print_crashes
  return 1
}

# The crash report in a process's log, or its last lines when there is none.
crash_report() {
  local file=$1
  [ -f "$file" ] || { echo "  (no log at $file)"; return; }
  if grep -qE "Fatal error|Program crashed" "$file"; then
    grep -E "Fatal error" "$file" | tail -2 | cut -c1-400 | sed 's/^/  /'
    sed -n '/^Thread [0-9]* .*crashed:/,/^$/p' "$file" | head -30 | cut -c1-240 | sed 's/^/  /'
  else
    tail -5 "$file" | cut -c1-240 | sed 's/^/  /'
  fi
}

print_crashes() {
  [ -s "$HERALD_DEV_DIR/crashes.txt" ] || return 0
  log "processes that died:"; cat "$HERALD_DEV_DIR/crashes.txt"
}

# psql on the stack's throwaway database; arguments are psql's (-c "…").
stack_psql() {
  local pg; pg=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['postgres']; print(p['binDirectory'], p['port'], p['user'], p['password'], p['database'])" "$HERALD_DEV_DIR/stack.json")
  local pgbin pgport pguser pgpassword pgdatabase
  read -r pgbin pgport pguser pgpassword pgdatabase <<< "$pg"
  PGPASSWORD=$pgpassword "$pgbin/psql" -h 127.0.0.1 -p "$pgport" -U "$pguser" -d "$pgdatabase" -At "$@"
}

# Fields of a push's status, space-separated, from one status read (python reads the JSON).
field() {
  local push=$1; shift
  "$herald" push status "$push" --json 2>/dev/null | python3 -c "
import json, sys
status = json.load(sys.stdin); counters = status['counters']
done = counters['accepted'] + counters.get('delivered_online', 0) + counters['rejected'] + counters['expired'] + counters['canceled'] + counters.get('skipped', 0)
values = {'state': status['state'], 'done': done, 'targeted': counters['targeted'],
          'accepted': counters['accepted'], 'expired': counters['expired'], 'skipped': counters.get('skipped', 0)}
print(' '.join(str(values[name]) for name in sys.argv[1:]))" "$@"
}

wait_completed() {
  local push=$1 limit=$2 start=$SECONDS
  while [ $((SECONDS - start)) -lt "$limit" ]; do
    [ "$(field "$push" state)" = completed ] && return 0
    sleep 0.5
  done
  fail "push $push not completed within ${limit}s: $("$herald" push status "$push" | head -2 | tail -1)"
  diagnose
  return 1
}

# What each process was doing when a push got stuck, printed once (CI keeps only the end of
# the output): the metrics that tell a stuck sender from a stuck accountant, the database
# sessions that are busy or inside a transaction, and the last warnings of each process.
diagnosed=0
diagnose() {
  [ "$diagnosed" = 0 ] || return 0
  diagnosed=1
  log "diagnostics"
  python3 - "$HERALD_DEV_DIR/stack.json" <<'PY'
import json, sys, urllib.request
stack = json.load(open(sys.argv[1]))
keep = ("herald_sender_batches_in_flight", "herald_sender_batches_total", "herald_sender_apns_in_flight",
        "herald_sender_consumer_lag", "herald_sender_notifications_total{outcome=\"accepted\"",
        "herald_center_outcome_batches", "herald_center_batches_produced_total", "herald_center_fanouts_running",
        "herald_pushes{", "herald_outbox_backlog_records", "herald_kafka_consumer_lag{")
for name, url in sorted(stack.get("metricsURLs", {}).items()):
    try:
        text = urllib.request.urlopen(url, timeout=3).read().decode()
    except Exception as error:
        print(f"  {name}: metrics unreadable ({error})"); continue
    lines = [line for line in text.splitlines() if line.startswith(keep) and not line.endswith(" 0")]
    print(f"  {name}: " + "; ".join(line.replace("herald_", "") for line in lines))
PY
  stack_psql -F ' | ' -c "
    SELECT 'pg ' || pid, state, wait_event_type || ':' || wait_event, now() - xact_start, left(regexp_replace(query, '\s+', ' ', 'g'), 100)
    FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND (state <> 'idle' OR xact_start IS NOT NULL)" 2>&1 | sed 's/^/  /'
  for file in "$HERALD_DEV_DIR"/logs/herald-*.log; do
    grep -E " (warning|error|critical) " "$file" | grep -v librdkafka | tail -3 | cut -c1-240 | sed "s|^|  $(basename "$file" .log): |"
  done
}

