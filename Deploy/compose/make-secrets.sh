#!/usr/bin/env bash
# Makes secrets/ for compose.yaml, once: a master key, an admin token, a database password, a
# certificate for apns-sim that names the host the sender dials (apns-sim), and one for the
# gateway that names the host apps connect to (the first argument; localhost by default). Keep a copy of the
# master key: stored APNs credentials cannot be read without it.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p secrets
chmod 700 secrets
[ -s secrets/master-key ] || head -c 32 /dev/urandom | base64 > secrets/master-key
[ -s secrets/admin-token ] || openssl rand -base64 32 > secrets/admin-token
[ -s secrets/postgres-password ] || openssl rand -hex 24 > secrets/postgres-password
if [ ! -s secrets/apns-sim.crt ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 \
    -subj "/CN=apns-sim" -addext "subjectAltName=DNS:apns-sim" \
    -keyout secrets/apns-sim.key -out secrets/apns-sim.crt 2>/dev/null
fi
# The gateway's identity, for the name apps connect to (self-signed: an app trusts it by pinning;
# put a certificate from your CA in secrets/gateway.crt and .key instead for real phones).
host=${1:-localhost}
if [ ! -s secrets/gateway.crt ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 \
    -subj "/CN=$host" -addext "subjectAltName=DNS:$host,DNS:localhost,IP:127.0.0.1" \
    -keyout secrets/gateway.key -out secrets/gateway.crt 2>/dev/null
fi
# Compose bind-mounts file secrets as they are on this host (it ignores uid and mode for them):
# the files are readable by the containers' users, the folder by this user only.
chmod 444 secrets/*
echo "secrets/ ready: $(ls secrets | tr '\n' ' ')"
