#!/usr/bin/env python3
"""What issue 46 asks of Herald at ten million devices beside the broadcast, on a running
`herald dev` stack whose app holds them (Benchmarks/EndToEnd/run.sh runs it after its broadcast
when E2E_AT_SCALE=1): the dry runs (validate: the audience's size, and the local-time plan's
counts by zone) for everyone, a tag and a segment, timed; then a tag push and a segment push sent
end to end, each timed from the API's 202 to its last outcome counted, in µs per notification
beside the broadcast's. The console's pages and /v1/stats are Benchmarks/Console/pages.sh's.

    at-scale.py BROADCAST_US_PER_NOTIFICATION

Reads the API's address and the app's server key as the CLI does (HERALD_CLI_CONFIG, HERALD_API_URL).
The last line is JSON.
"""
import http.client
import json
import os
import sys
import time
import urllib.parse

broadcast_us = float(sys.argv[1])
config = json.load(open(os.environ["HERALD_CLI_CONFIG"]))
key = os.environ.get("HERALD_API_KEY") or config["api_key"]
url = urllib.parse.urlsplit(os.environ.get("HERALD_API_URL") or config["api_url"])
connection = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=600)


def call(method, path, body=None):
    headers = {"Authorization": f"Bearer {key}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    response = connection.getresponse()
    data = response.read()
    if response.status >= 300:
        sys.exit(f"{method} {path}: HTTP {response.status}: {data[:300]!r}")
    return json.loads(data) if data else None


notification = {"alert": {"title": "Ten million", "body": "At scale"}}
segment = call("POST", "/v1/segments", {
    "name": f"sports and vip {int(time.time())}",
    "filter": {"and": [{"attribute": "tag", "op": "eq", "value": "sports"},
                       {"attribute": "tag", "op": "eq", "value": "vip"}]}})
audiences = [("everyone", {"all": True}), ("tag vip", {"tags": {"any": ["vip"]}}),
             ("segment sports and vip", {"segment_id": segment["id"]})]

figures = {"validate": {}, "pushes": {}}
# A dry run counts the audience exactly up to a bound (100,000 by default) and estimates past it
# ("~" below): a small audience is counted to its end, a large one only to the bound.
print(f"{'dry run (POST /v1/pushes/validate)':44}{'seconds':>9}{'audience':>13}")
for name, audience in audiences:
    started = time.monotonic()
    answer = call("POST", "/v1/pushes/validate", {"audience": audience, "notification": notification})
    seconds = time.monotonic() - started
    size = ("~" if answer["audience_size_estimated"] else "") + f"{answer['audience_size']:,}"
    print(f"  {name:42}{seconds:>9.2f}{size:>13}")
    figures["validate"][name] = {"seconds": round(seconds, 3), "audience_size": answer["audience_size"],
                                 "estimated": answer["audience_size_estimated"]}
started = time.monotonic()
answer = call("POST", "/v1/pushes/validate", {
    "audience": {"all": True}, "notification": notification, "options": {"local_time": {"time": "09:00"}}})
seconds = time.monotonic() - started
zones = answer.get("waves") or []
size = ("~" if answer["audience_size_estimated"] else "") + f"{answer['audience_size']:,}"
print(f"  {'everyone at 09:00 local time (the plan)':42}{seconds:>9.2f}{size:>13}  {len(zones)} waves")
figures["validate"]["everyone at 09:00 local time"] = {
    "seconds": round(seconds, 3), "audience_size": answer["audience_size"], "waves": len(zones)}

print(f"{'push, 202 to the last outcome':44}{'seconds':>9}{'targeted':>12}{'µs/notif.':>11}{'vs broadcast':>14}")
for name, audience in audiences[1:]:
    started = time.monotonic()
    push = call("POST", "/v1/pushes", {"audience": audience, "notification": notification})
    accepted = time.monotonic()
    while True:
        status = call("GET", f"/v1/pushes/{push['id']}")
        if status["state"] == "completed":
            break
        if status["state"] in ("canceled", "failed") or time.monotonic() - accepted > 3600:
            sys.exit(f"push {push['id']} ({name}) ended {status['state']} instead of completing, or took over an hour")
        time.sleep(0.1)
    seconds = time.monotonic() - accepted
    counters = status["counters"]
    per = seconds * 1e6 / max(counters["targeted"], 1)
    print(f"  {name:42}{seconds:>9.2f}{counters['targeted']:>12,}{per:>11.1f}{per / broadcast_us:>13.2f}×")
    figures["pushes"][name] = {"seconds": round(seconds, 2), "accepted_in": round(accepted - started, 3),
                               "targeted": counters["targeted"], "accepted": counters["accepted"],
                               "us_per_notification": round(per, 2)}
print(json.dumps(figures))
