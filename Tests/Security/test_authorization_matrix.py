"""The authorization matrix: every operation of Schemas/openapi.yaml called by every kind of caller
against a live herald-api, each answer compared with Tests/Security/authorization-matrix.tsv.

    python test_authorization_matrix.py BASE_URL ADMIN_TOKEN

Each operation gets a fresh world (app T with its keys, a device, two scheduled pushes, a
credential; app O with its keys) and a new one after any cell that may have changed it. A cell that
differs from the table fails the run; so does an operation of the contract the table does not name,
and an answer to another app's key that mentions one of T's ids.
"""

import json
import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import requests
import yaml

ROOT = Path(__file__).resolve().parents[2]
PRINCIPALS = ["none", "wrong", "revoked", "client", "scoped", "other_server", "other_admin", "app_admin",
              "server", "admin"]
SCOPES = ["pushes:write", "pushes:read", "devices:write", "devices:read", "stats:read"]


def random_token():
    return uuid.uuid4().hex + uuid.uuid4().hex


def p8_key():
    """A fresh P-256 private key in PKCS#8 PEM, as Apple's .p8 files hold."""
    key = subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout"],
                         check=True, capture_output=True).stdout
    return subprocess.run(["openssl", "pkcs8", "-topk8", "-nocrypt"], input=key, check=True,
                          capture_output=True).stdout.decode()


class API:
    def __init__(self, base, admin):
        self.base = base
        self.admin = admin
        self.session = requests.Session()

    def call(self, method, path, key=None, body=None, content_type="application/json", stream=False):
        headers = {}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = body if isinstance(body, (str, bytes)) else json.dumps(body)
        response = self.session.request(method, self.base + path, headers=headers, data=data, timeout=30,
                                        stream=stream)
        if stream:
            status = response.status_code
            response.close()
            return status, ""
        return response.status_code, response.text

    def ok(self, method, path, key, body=None, expect=(200, 201, 202, 204)):
        status, text = self.call(method, path, key, body)
        if status not in expect:
            raise RuntimeError(f"setting up: {method} {path} answered {status}: {text}")
        return json.loads(text) if text else {}


class World:
    """App T (the target) and app O (the other), with everything the operations need."""

    def __init__(self, api, p8):
        self.api = api
        admin = api.admin
        suffix = uuid.uuid4().hex[:8]
        # T lets its client key set the tag the device operations use (a new app names none).
        t = api.ok("POST", "/v1/apps", admin, {"name": "matrix T", "bundle_id": f"com.herald.matrix.t{suffix}",
                                               "client_tags": ["news", "sport"]})
        o = api.ok("POST", "/v1/apps", admin, {"name": "matrix O", "bundle_id": f"com.herald.matrix.o{suffix}"})
        self.app = t["app"]["id"]
        self.keys = {
            "server": t["server_key"]["key"],
            "client": t["client_key"]["key"],
            "other_server": o["server_key"]["key"],
            "admin": admin,
            "wrong": "hs_" + "A" * 43,
        }
        self.key_id = t["server_key"]["id"]
        self.keys["app_admin"] = api.ok("POST", f"/v1/apps/{self.app}/keys", admin, {"kind": "admin"})["key"]
        self.keys["other_admin"] = api.ok("POST", f"/v1/apps/{o['app']['id']}/keys", admin, {"kind": "admin"})["key"]
        revoked = api.ok("POST", f"/v1/apps/{self.app}/keys", admin, {"kind": "server"})
        api.ok("DELETE", f"/v1/apps/{self.app}/keys/{revoked['id']}", admin)
        self.keys["revoked"] = revoked["key"]
        self.scoped = {scope: api.ok("POST", f"/v1/apps/{self.app}/keys", admin,
                                     {"kind": "server", "scopes": [scope]})["key"] for scope in SCOPES}
        self.spare_key = api.ok("POST", f"/v1/apps/{self.app}/keys", admin, {"kind": "server"})["id"]
        api.ok("PUT", f"/v1/apps/{self.app}/credentials/sandbox", admin,
               {"kind": "token", "key_id": "MATRIX0001", "team_id": "TEAM000001", "private_key": p8})
        self.webhook = api.ok("POST", f"/v1/apps/{self.app}/webhooks", admin,
                              {"url": "https://hooks.example.com/herald", "event_types": ["push.completed"]})["webhook"]["id"]
        self.segment = api.ok("POST", "/v1/segments", self.keys["server"],
                              {"name": "matrix", "filter": SEGMENT_FILTER})["id"]
        self.template = api.ok("POST", "/v1/templates", self.keys["server"],
                               {"name": "matrix", "notification": TEMPLATE_NOTIFICATION})["id"]
        self.schedule = api.ok("POST", "/v1/schedules", self.keys["server"], SCHEDULE)["id"]
        self.token = random_token()
        device = api.ok("POST", "/v1/devices", self.keys["server"],
                        {"token": self.token, "environment": "sandbox", "tags": ["news"]})
        self.device = device["registration_id"]
        later = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        push = {"audience": {"all": True}, "notification": {"alert": {"body": "matrix"}},
                "options": {"scheduled_at": later}}
        self.push = api.ok("POST", "/v1/pushes", self.keys["server"], push)["id"]
        self.paused_push = api.ok("POST", "/v1/pushes", self.keys["server"], push)["id"]
        api.ok("POST", f"/v1/pushes/{self.paused_push}/pause", self.keys["server"])
        self.secrets = {self.app, self.push, self.paused_push, self.token, self.key_id}

    def key_for(self, principal, scope):
        if principal == "none":
            return None
        if principal == "scoped":
            return self.scoped["pushes:read" if scope == "stats:read" else "stats:read"]
        return self.keys[principal]


SEGMENT_FILTER = {"attribute": "app_version", "op": "gte", "value": "5.0"}
PUSH = {"audience": {"all": True}, "notification": {"alert": {"body": "hello"}}}
TEMPLATE_NOTIFICATION = {"alert": {"title": "Hi {{first_name | default: \"there\"}}", "body": "news"},
                         "localizations": {"de": {"title": "Hallo {{first_name | default: \"du\"}}"}}}


SCHEDULE = {"name": "matrix", "recurrence": {"rrule": "FREQ=WEEKLY;BYDAY=MO;BYHOUR=8;BYMINUTE=0",
                                             "time_zone": "Europe/Berlin", "starts_at": "2030-01-07T08:00"},
            "push": {"audience": {"tags": {"any": ["news"]}}, "notification": {"alert": {"body": "weekly"}}}}


def request_for(operation, world):
    """(method, path, body, content type) of `operation` aimed at T's things."""
    app, push = world.app, world.push
    return {
        "getHealth": ("GET", "/healthz", None),
        "getReadiness": ("GET", "/readyz", None),
        "getMetrics": ("GET", "/metrics", None),
        "createApp": ("POST", "/v1/apps", {"name": "x", "bundle_id": "com.herald.matrix.x"}),
        "listApps": ("GET", "/v1/apps", None),
        "getApp": ("GET", f"/v1/apps/{app}", None),
        "updateApp": ("PATCH", f"/v1/apps/{app}", {"name": "renamed"}),
        "deleteApp": ("DELETE", f"/v1/apps/{app}", None),
        "listKeys": ("GET", f"/v1/apps/{app}/keys", None),
        "createKey": ("POST", f"/v1/apps/{app}/keys", {"kind": "server"}),
        "revokeKey": ("DELETE", f"/v1/apps/{app}/keys/{world.spare_key}", None),
        "rotateKey": ("POST", f"/v1/apps/{app}/keys/{world.spare_key}/rotate", {}),
        "listCredentials": ("GET", f"/v1/apps/{app}/credentials", None),
        "putCredential": ("PUT", f"/v1/apps/{app}/credentials/production",
                          {"kind": "token", "key_id": "MATRIX0002", "team_id": "TEAM000001",
                           "private_key": world.p8}),
        "deleteCredential": ("DELETE", f"/v1/apps/{app}/credentials/sandbox", None),
        "rotateIdentitySecret": ("POST", f"/v1/apps/{app}/identity-secret", {}),
        "listAuditEvents": ("GET", f"/v1/apps/{app}/audit-events", None),
        "createWebhook": ("POST", f"/v1/apps/{app}/webhooks",
                          {"url": "https://hooks.example.com/other", "event_types": ["push.canceled"]}),
        "listWebhooks": ("GET", f"/v1/apps/{app}/webhooks", None),
        "deleteWebhook": ("DELETE", f"/v1/apps/{app}/webhooks/{world.webhook}", None),
        "sendTestWebhook": ("POST", f"/v1/apps/{app}/webhooks/{world.webhook}/test", None),
        "listWebhookAttempts": ("GET", f"/v1/apps/{app}/webhooks/{world.webhook}/attempts", None),
        "updateWebhook": ("PATCH", f"/v1/apps/{app}/webhooks/{world.webhook}", {"max_concurrency": 3}),
        "rotateWebhookSecret": ("POST", f"/v1/apps/{app}/webhooks/{world.webhook}/rotate-secret", {}),
        "listWebhookDeliveries": ("GET", f"/v1/apps/{app}/webhooks/{world.webhook}/deliveries?state=dead", None),
        "replayWebhookDeliveries": ("POST", f"/v1/apps/{app}/webhooks/{world.webhook}/deliveries/replay", {}),
        "registerDevice": ("POST", "/v1/devices", {"token": random_token(), "environment": "sandbox"}),
        "listDevices": ("GET", "/v1/devices", None),
        "importDevices": ("POST", "/v1/devices/import",
                          json.dumps({"token": random_token(), "environment": "sandbox"}) + "\n",
                          "application/x-ndjson"),
        "getDeviceByToken": ("GET", f"/v1/devices/by-token/{world.token}", None),
        "updateDeviceByToken": ("PATCH", f"/v1/devices/by-token/{world.token}", {"add_tags": ["news"]}),
        "deleteDeviceByToken": ("DELETE", f"/v1/devices/by-token/{world.token}", None),
        # A token T never registered: the callers allowed to report get as far as looking it up (404).
        "reportEvents": ("POST", "/v1/events", {"events": [{
            "push_id": push, "token": random_token(), "type": "opened",
            "occurred_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}]}),
        "getDevice": ("GET", f"/v1/devices/{world.device}", None),
        "updateDevice": ("PATCH", f"/v1/devices/{world.device}", {"add_tags": ["sport"]}),
        "deleteDevice": ("DELETE", f"/v1/devices/{world.device}", None),
        "createPush": ("POST", "/v1/pushes", PUSH),
        "createSegment": ("POST", "/v1/segments", {"name": "matrix-2", "filter": SEGMENT_FILTER}),
        "listSegments": ("GET", "/v1/segments", None),
        "getSegment": ("GET", f"/v1/segments/{world.segment}", None),
        "updateSegment": ("PATCH", f"/v1/segments/{world.segment}", {"description": "changed"}),
        "deleteSegment": ("DELETE", f"/v1/segments/{world.segment}", None),
        "createTemplate": ("POST", "/v1/templates", {"name": "matrix-2", "notification": TEMPLATE_NOTIFICATION}),
        "listTemplates": ("GET", "/v1/templates", None),
        "getTemplate": ("GET", f"/v1/templates/{world.template}", None),
        "updateTemplate": ("PATCH", f"/v1/templates/{world.template}", {"description": "changed"}),
        "deleteTemplate": ("DELETE", f"/v1/templates/{world.template}", None),
        "createSchedule": ("POST", "/v1/schedules", {**SCHEDULE, "name": "matrix-2"}),
        "listSchedules": ("GET", "/v1/schedules", None),
        "getSchedule": ("GET", f"/v1/schedules/{world.schedule}", None),
        "updateSchedule": ("PATCH", f"/v1/schedules/{world.schedule}", {"late_window_minutes": 30}),
        "deleteSchedule": ("DELETE", f"/v1/schedules/{world.schedule}", None),
        "pauseSchedule": ("POST", f"/v1/schedules/{world.schedule}/pause", None),
        "resumeSchedule": ("POST", f"/v1/schedules/{world.schedule}/resume", None),
        "listPushes": ("GET", "/v1/pushes", None),
        "validatePush": ("POST", "/v1/pushes/validate", PUSH),
        "getPush": ("GET", f"/v1/pushes/{push}", None),
        "cancelPush": ("DELETE", f"/v1/pushes/{push}", None),
        # T's push is no A/B test in winner mode: the callers allowed get as far as saying so (409).
        "pickWinner": ("POST", f"/v1/pushes/{push}/winner", {"variant": "a"}),
        "pausePush": ("POST", f"/v1/pushes/{push}/pause", None),
        "resumePush": ("POST", f"/v1/pushes/{world.paused_push}/resume", None),
        "recallPush": ("POST", f"/v1/pushes/{push}/recall", None),
        "streamPushEvents": ("GET", f"/v1/pushes/{push}/events", None),
        "listPushFailures": ("GET", f"/v1/pushes/{push}/failures", None),
        "getPushReport": ("GET", f"/v1/pushes/{push}/report", None),
        "getStatistics": ("GET", "/v1/stats", None),
        "listTagStatistics": ("GET", "/v1/stats/tags", None),
    }[operation]


def contract_operations():
    contract = yaml.safe_load((ROOT / "Schemas/openapi.yaml").read_text())
    operations = {}
    for path, item in contract["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and "operationId" in operation:
                operations[operation["operationId"]] = operation
    return operations


def read_table():
    rows = {}
    lines = [line for line in (ROOT / "Tests/Security/authorization-matrix.tsv").read_text().splitlines()
             if line and not line.startswith("#")]
    header = lines[0].split("\t")
    if header[2:] != PRINCIPALS:
        raise SystemExit(f"authorization-matrix.tsv: the columns must be operation, scope, {PRINCIPALS}")
    for line in lines[1:]:
        cells = line.split("\t")
        scope = None if cells[1] == "-" else cells[1]
        if scope is not None and scope not in SCOPES:
            raise SystemExit(f"authorization-matrix.tsv: {cells[0]}: {scope} is not a scope")
        rows[cells[0]] = (scope, dict(zip(PRINCIPALS, (int(cell) for cell in cells[2:]))))
    return rows


def main():
    base, admin = sys.argv[1], sys.argv[2]
    api = API(base, admin)
    table = read_table()
    operations = contract_operations()
    failures = []
    missing = sorted(set(operations) - set(table))
    unknown = sorted(set(table) - set(operations))
    if missing:
        failures.append(f"operations of the contract missing from the table: {', '.join(missing)}")
    if unknown:
        failures.append(f"operations in the table the contract does not have: {', '.join(unknown)}")
    p8 = p8_key()
    cells = 0
    for operation in sorted(set(table) & set(operations)):
        scope, expectations = table[operation]
        world = None
        # The callers of the table, then a key with only the operation's scope (answering as `server`).
        for principal in PRINCIPALS + (["only_scope"] if scope else []):
            if world is None:
                world = World(api, p8)
                world.p8 = p8
            method, path, body, *content = request_for(operation, world)
            key = world.scoped[scope] if principal == "only_scope" else world.key_for(principal, scope)
            status, text = api.call(method, path, key, body, *(content or ["application/json"]),
                                    stream=operation == "streamPushEvents")
            cells += 1
            expected = expectations["server" if principal == "only_scope" else principal]
            if status != expected:
                failures.append(f"{operation} as {principal}: expected {expected}, got {status} {text[:200]}")
            if principal.startswith("other_") and 200 <= status < 300:
                leaked = [secret for secret in world.secrets if str(secret) in text]
                if leaked:
                    failures.append(f"{operation} as {principal}: the answer names T's {leaked}")
            if 200 <= status < 300 and method != "GET":
                world = None  # the cell may have changed T: the next one gets a fresh world
    print(f"authorization matrix: {cells} answers checked: {len(table)} operations x {len(PRINCIPALS)} callers,"
          " and each scoped operation with a key of that scope alone")
    for failure in failures:
        print(f"  FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
