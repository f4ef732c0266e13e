#!/usr/bin/env bash
# Makes (or refreshes) a Python virtualenv with a requirements file's packages from PyPI, for the
# test tools Debian does not package. Kept when its requirements have not changed; the install is
# tried three times (a package index that drops a connection once should not fail a test run), and
# a failed one leaves no half-made venv behind.
#
#   scripts/python-venv.sh VENV REQUIREMENTS WHAT     (WHAT: a few words for the log)
set -uo pipefail
venv=$1 requirements=$2 what=$3
if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$venv/requirements.txt"; then exit 0; fi
echo "preparing $venv ($what from PyPI)"
rm -rf "$venv"
python3 -m venv "$venv" || { echo "python3 -m venv failed: apt-get install python3-venv" >&2; exit 1; }
for attempt in 1 2 3; do
  if "$venv/bin/pip" install --quiet --disable-pip-version-check --retries 5 --timeout 30 -r "$requirements"; then
    cp "$requirements" "$venv/requirements.txt"
    exit 0
  fi
  echo "pip install -r $requirements failed (attempt $attempt of 3)" >&2
  sleep $((attempt * 5))
done
rm -rf "$venv"
echo "could not install $requirements into $venv" >&2
exit 1
