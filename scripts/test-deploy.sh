#!/usr/bin/env bash
# Checks the deployment artifacts under Deploy/ with the tools that exist here:
#   - the Prometheus rules parse (promtool check rules) and every alert passes its unit tests
#     (promtool test rules: each alert quiet on healthy input, firing after its `for` window);
#   - every herald_* metric the rules read is one a Herald process writes (its name appears as a
#     family in Sources/), so a renamed metric cannot leave an alert silently watching nothing;
#   - every alert has a unit test and a runbook_url naming its section of docs/operations.md;
#   - the Containerfile passes hadolint (Deploy/container/hadolint.yaml);
#   - scripts/kustomize_render.py, the Python kustomize subset the checks render with (Debian 12
#     has no kubectl able to), renders as kustomize does (scripts/test_kustomize_render.py; also
#     against `kubectl kustomize` on Herald's overlays when kubectl is installed);
#   - both kustomize overlays render, validate (kubernetes-validate; KEDA objects against
#     Deploy/kubernetes/schemas) and keep Herald's rules, and the compose file sets what the
#     Kubernetes base sets (scripts/check-kubernetes.py says which).
# The Python tools live in .local/venv-deploy, made on first use from PyPI.
# Run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v promtool >/dev/null || { echo "deploy: promtool not found (apt-get install prometheus)" >&2; exit 1; }
rules=Deploy/prometheus/herald-rules.yml
promtool check rules "$rules"
(cd Deploy/prometheus && promtool test rules herald-rules.test.yml)

missing=0
for metric in $(grep -oE '\bherald_[a-z0-9_]+' "$rules" | sort -u); do
  family=$metric
  # A histogram's series are read by their family name.
  family=${family%_bucket}; family=${family%_sum}; family=${family%_count}
  if ! grep -rqF "\"$family\"" Sources/; then
    echo "deploy: $rules reads $metric, which no Herald process writes" >&2
    missing=1
  fi
done
[ "$missing" = 0 ] || exit 1
echo "deploy: rules and alert tests pass; every metric they read is written by Herald"

# Every alert has a unit test and a runbook: a runbook_url naming a `### AlertName` section of
# docs/operations.md (GitHub's anchor of a heading of one word is the word in lower case).
for alert in $(grep -oE '^ +- alert: [A-Za-z]+' "$rules" | awk '{print $3}'); do
  grep -qE "alertname: $alert\$" Deploy/prometheus/herald-rules.test.yml ||
    { echo "deploy: alert $alert has no unit test in herald-rules.test.yml" >&2; missing=1; }
  anchor=$(echo "$alert" | tr '[:upper:]' '[:lower:]')
  grep -qF "runbook_url: \"docs/operations.md#$anchor\"" "$rules" ||
    { echo "deploy: alert $alert has no runbook_url docs/operations.md#$anchor" >&2; missing=1; }
  grep -qE "^### $alert\$" docs/operations.md ||
    { echo "deploy: docs/operations.md has no runbook section '### $alert'" >&2; missing=1; }
done
[ "$missing" = 0 ] || exit 1
echo "deploy: every alert has a unit test and a runbook section in docs/operations.md"

venv=.local/venv-deploy
requirements=scripts/deploy-requirements.txt
scripts/python-venv.sh "$venv" "$requirements" "hadolint, kubernetes-validate" || exit 1
"$venv/bin/hadolint" --config Deploy/container/hadolint.yaml Deploy/container/Containerfile
echo "deploy: Containerfile passes hadolint"
# The production image (the last stage, the default target) holds no apns-sim: it copies only
# what the build put in /out/herald, and the build puts apns-sim in /out/apns-sim alone.
containerfile=Deploy/container/Containerfile
final_stage=$(awk '/^FROM /{ text = "" } { text = text $0 "\n" } END { printf "%s", text }' "$containerfile")
herald_products=$(grep -B3 'install -m 755 ".build/release/$product" /out/herald/' "$containerfile" | grep -o 'for product in [^;]*' || true)
if ! grep -q '^FROM runtime AS herald$' <<<"$final_stage" || grep -q 'apns-sim' <<<"$final_stage" ||
  [ -z "$herald_products" ] || grep -q 'apns-sim' <<<"$herald_products"; then
  echo "deploy: the Containerfile's default target must be the herald stage, without apns-sim ($herald_products)" >&2
  exit 1
fi
echo "deploy: the production image holds no apns-sim (${herald_products#for product in })"
"$venv/bin/python" scripts/test_kustomize_render.py
"$venv/bin/python" scripts/check-kubernetes.py
