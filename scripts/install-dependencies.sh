#!/usr/bin/env bash
# Installs the system packages Herald builds and tests with, if any is missing.
# Debian/Ubuntu: apt packages; needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  librdkafka-dev      # Kafka client (and the development broker's mock cluster)
  libnghttp2-dev      # HTTP/2 engine for the APNs client and apns-sim
  libpq-dev           # libpq: herald-center streams audiences with COPY
  postgresql          # a throwaway local PostgreSQL server for development and tests
  postgresql-contrib
  kcat                # reference producer for the Kafka benchmark
  nghttp2-client      # h2load: load generator for the apns-sim benchmark
  nghttp2-server      # nghttpd: the C reference server in the apns-sim benchmark
  wrk                 # HTTP load generator for the Open API benchmark
  curl                # an HTTP/2 client that is not Herald's, for apns-sim's tests
  python3-venv        # a virtualenv for the Python HTTP/2 clients in apns-sim's tests
  prometheus          # promtool: the end-to-end run lints every process's /metrics with it
  openssl             # makes the local PostgreSQL cluster's TLS certificates (scripts/postgres.sh)
  haproxy             # the load balancer in front of several herald-api (herald dev up --apis N)
  kubectl             # kubectl kustomize renders Deploy/kubernetes for scripts/check-kubernetes.py
  debootstrap         # make check-image: the container's runtime packages in a minimal bookworm root
  chromium            # the console's browser tests (Selenium drives it headless)
  chromium-driver
  pkg-config
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "dependencies: all system packages present"
  exit 0
fi

echo "dependencies: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "dependencies: installed ${missing[*]}"
