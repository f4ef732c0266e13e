"""apns-sim exercised by clients that are not Herald's own: curl (nghttp2 inside), the Python
h2 state machine over a raw TLS socket, and httpx with HTTP/2.

Run by `make test` through scripts/test-external-clients.sh, which sets HERALD_BIN_DIR and a
virtualenv with h2, httpx[http2] and cryptography. Each test class starts its own apns-sim
process on free ports and stops it afterwards.
"""
import base64
import datetime
import json
import os
import socket
import ssl
import subprocess
import tempfile
import time
import unittest

import h2.config
import h2.connection
import h2.events
import h2.settings
import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

BIN = os.path.join(os.environ.get("HERALD_BIN_DIR", ".build/debug"), "apns-sim")
TOPIC = "com.herald.demo"
TEAM = "TEAM000001"
KEY_ID = "KEY0000001"
GOOD = "aa11bb22cc33dd44"
GONE = "ee55ff66"
GONE_AT = 1700000000123
PAYLOAD = b'{"aps":{"alert":"hello"}}'


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def provider_token(key, key_id=KEY_ID, team=TEAM, issued_at=None) -> str:
    header = b64url(json.dumps({"alg": "ES256", "kid": key_id}).encode())
    claims = b64url(json.dumps({"iss": team, "iat": int(issued_at or time.time())}).encode())
    r, s = decode_dss_signature(key.sign(f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256())))
    return f"{header}.{claims}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


class Simulator:
    """An apns-sim child process on free ports, with one signing key and a few devices."""

    def __init__(self, extra_args=(), folder=None):
        self.folder = folder or tempfile.mkdtemp(prefix="apns-sim-test-")
        self.key = ec.generate_private_key(ec.SECP256R1())
        public = os.path.join(self.folder, "key.pub.pem")
        with open(public, "wb") as f:
            f.write(self.key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        devices = os.path.join(self.folder, "devices.ndjson")
        with open(devices, "w") as f:
            f.write(json.dumps({"token": GOOD, "topic": TOPIC}) + "\n")
            f.write(json.dumps({"token": GONE, "topic": TOPIC, "unregisteredAt": GONE_AT}) + "\n")
        self.cert = os.path.join(self.folder, "sim-cert.pem")
        ready = os.path.join(self.folder, "ready.json")
        self.process = subprocess.Popen(
            [BIN, "--port", "0", "--admin-port", "0", "--threads", "1", "--ready-file", ready,
             "--write-certificate", self.cert, "--key", f"{KEY_ID}:{TEAM}:{public}:{TOPIC}",
             "--devices", devices, "--log-level", "warning", *extra_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(300):
            if os.path.exists(ready) and os.path.getsize(ready) > 0:
                break
            if self.process.poll() is not None:
                raise RuntimeError("apns-sim exited: " + self.process.stderr.read().decode())
            time.sleep(0.05)
        with open(ready) as f:
            ports = json.load(f)
        self.port, self.admin_port = ports["port"], ports["adminPort"]
        self.token = provider_token(self.key)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=20)
        self.process.stderr.close()

    def admin(self, method, path, body=None):
        return httpx.request(method, f"http://127.0.0.1:{self.admin_port}{path}", json=body, timeout=10)

    def curl(self, path, *args, data=PAYLOAD.decode()):
        out = subprocess.run(
            ["curl", "-s", "--http2", "--cacert", self.cert, "-D", "-", "-o", "-",
             "-w", "\n%{http_code} %{http_version}", *args, "--data-binary", data,
             f"https://localhost:{self.port}{path}"],
            capture_output=True, text=True, timeout=20)
        lines = out.stdout.strip().split("\n")
        status, version = lines[-1].split()
        headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines if ":" in l and not l.startswith("{")}
        body = next((l for l in lines if l.startswith("{")), None)
        return int(status), version, headers, (json.loads(body) if body else None)


class RawH2:
    """A client built on the h2 state machine over a raw TLS socket: it can do what polite
    clients won't (open more streams than allowed, switch tokens)."""

    class Unbounded(h2.connection.H2Connection):
        # h2 refuses to open streams over the peer's limit; these tests need to.
        open_outbound_streams = property(lambda self: 0)

    def __init__(self, sim, unbounded=False, read_settings=True):
        context = ssl.create_default_context(cafile=sim.cert)
        context.set_alpn_protocols(["h2"])
        raw = socket.create_connection(("127.0.0.1", sim.port), timeout=10)
        self.sock = context.wrap_socket(raw, server_hostname="localhost")
        assert self.sock.selected_alpn_protocol() == "h2"
        cls = self.Unbounded if unbounded else h2.connection.H2Connection
        self.conn = cls(config=h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.flush()
        self.responses, self.resets, self.goaway, self.server_max_streams = {}, {}, None, None
        if read_settings:
            while self.server_max_streams is None:
                self.pump()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, token=GOOD, bearer=None, extra=(), end=True, payload=PAYLOAD, flush=True):
        stream = self.conn.get_next_available_stream_id()
        headers = [(":method", "POST"), (":scheme", "https"), (":authority", "localhost"),
                   (":path", f"/3/device/{token}"), ("apns-topic", TOPIC)]
        if bearer:
            headers.append(("authorization", f"bearer {bearer}"))
        self.conn.send_headers(stream, headers + list(extra))
        if end:
            self.conn.send_data(stream, payload, end_stream=True)
        if flush:
            self.flush()
        return stream

    def pump(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("closed")
        for event in self.conn.receive_data(data):
            if isinstance(event, h2.events.RemoteSettingsChanged):
                changed = event.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
                if changed:
                    self.server_max_streams = changed.new_value
                elif self.server_max_streams is None:
                    self.server_max_streams = self.conn.remote_settings.max_concurrent_streams
            elif isinstance(event, h2.events.ResponseReceived):
                self.responses.setdefault(event.stream_id, {})["headers"] = dict(
                    (k.decode(), v.decode()) for k, v in event.headers)
            elif isinstance(event, h2.events.DataReceived):
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                self.responses.setdefault(event.stream_id, {}).setdefault("body", b"")
                self.responses[event.stream_id]["body"] += event.data
            elif isinstance(event, h2.events.StreamEnded):
                self.responses.setdefault(event.stream_id, {})["done"] = True
            elif isinstance(event, h2.events.StreamReset):
                self.resets[event.stream_id] = event.error_code
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.goaway = event
        self.flush()

    def wait(self, stream):
        while not self.responses.get(stream, {}).get("done") and stream not in self.resets:
            self.pump()
        return self.responses.get(stream)

    def status(self, stream):
        response = self.wait(stream)
        return int(response["headers"][":status"]), json.loads(response["body"]) if response.get("body") else None


class ProviderAPIWithCurl(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = Simulator()

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def auth(self):
        return ["-H", f"authorization: bearer {self.sim.token}", "-H", f"apns-topic: {TOPIC}"]

    def test_accepted_over_http2_with_apns_id(self):
        status, version, headers, body = self.sim.curl(f"/3/device/{GOOD}", *self.auth(), "-H", "apns-collapse-id: curl-1")
        self.assertEqual((status, version), (200, "2"))
        self.assertEqual(len(headers["apns-id"]), 36)
        recorded = [json.loads(l) for l in self.sim.admin("GET", f"/notifications?token={GOOD}").text.splitlines()]
        self.assertIn("curl-1", [n.get("collapseID") for n in recorded])

    def test_notifications_after_a_count_are_the_new_ones(self):
        everything = self.sim.admin("GET", "/notifications").text.splitlines()
        for collapse in ("after-1", "after-2"):
            status, _, _, _ = self.sim.curl(f"/3/device/{GOOD}", *self.auth(), "-H", f"apns-collapse-id: {collapse}")
            self.assertEqual(status, 200)
        newer = [json.loads(l) for l in self.sim.admin("GET", f"/notifications?after={len(everything)}").text.splitlines()]
        self.assertEqual([n["collapseID"] for n in newer], ["after-1", "after-2"])
        last = self.sim.admin("GET", f"/notifications?token={GOOD}&after={len(everything) + 1}").text.splitlines()
        self.assertEqual([json.loads(l)["collapseID"] for l in last], ["after-2"])
        self.assertEqual(self.sim.admin("GET", "/notifications?after=100000").text, "")
        page = self.sim.admin("GET", f"/notifications?after={len(everything)}&limit=1").text.splitlines()
        self.assertEqual([json.loads(l)["collapseID"] for l in page], ["after-1"])
        self.assertEqual(self.sim.admin("GET", "/notifications?limit=0").status_code, 400)
        refused = self.sim.admin("GET", "/notifications?after=-1")
        self.assertEqual(refused.status_code, 400)
        self.assertEqual(refused.json()["error"]["code"], "bad_after")

    def test_rules(self):
        cases = [
            (["-X", "GET"], f"/3/device/{GOOD}", 405, "MethodNotAllowed"),
            ([], "/3/dev/xyz", 404, "BadPath"),
            ([], "/3/device/abc", 400, "BadDeviceToken"),
            ([], "/3/device/deadbeef", 400, "BadDeviceToken"),
            ([], f"/3/device/{GONE}", 410, "Unregistered"),
            (["-H", "apns-priority: 3"], f"/3/device/{GOOD}", 400, "BadPriority"),
            (["-H", "apns-id: nope"], f"/3/device/{GOOD}", 400, "BadMessageId"),
            (["-H", "apns-push-type: voip"], f"/3/device/{GOOD}", 400, "InvalidPushType"),
            (["-H", "apns-expiration: soon"], f"/3/device/{GOOD}", 400, "BadExpirationDate"),
            (["-H", "apns-collapse-id: " + "c" * 65], f"/3/device/{GOOD}", 400, "BadCollapseId"),
        ]
        for extra, path, expected_status, reason in cases:
            with self.subTest(reason=reason, path=path):
                status, version, _, body = self.sim.curl(path, *self.auth(), *extra)
                self.assertEqual(version, "2")
                self.assertEqual(status, expected_status)
                self.assertEqual(body["reason"], reason)
                if reason == "Unregistered":
                    self.assertEqual(body["timestamp"], GONE_AT)

    def test_missing_topic_and_token(self):
        status, _, _, body = self.sim.curl(f"/3/device/{GOOD}", "-H", f"authorization: bearer {self.sim.token}")
        self.assertEqual((status, body["reason"]), (400, "MissingTopic"))
        status, _, _, body = self.sim.curl(f"/3/device/{GOOD}", "-H", f"apns-topic: {TOPIC}")
        self.assertEqual((status, body["reason"]), (403, "MissingProviderToken"))

    def test_payload_limits(self):
        exact = '{"aps":{"alert":"' + "x" * (4096 - 20) + '"}}'
        status, _, _, _ = self.sim.curl(f"/3/device/{GOOD}", *self.auth(), data=exact)
        self.assertEqual(status, 200)
        status, _, _, body = self.sim.curl(f"/3/device/{GOOD}", *self.auth(), data=exact[:-3] + 'x"}}')
        self.assertEqual((status, body["reason"]), (413, "PayloadTooLarge"))

    def test_httpx_http2_client(self):
        with httpx.Client(http2=True, verify=ssl.create_default_context(cafile=self.sim.cert)) as client:
            response = client.post(f"https://localhost:{self.sim.port}/3/device/{GOOD}", content=PAYLOAD,
                                   headers={"authorization": f"bearer {self.sim.token}", "apns-topic": TOPIC})
        self.assertEqual(response.http_version, "HTTP/2")
        self.assertEqual(response.status_code, 200)


class ProviderTokensAndStreams(unittest.TestCase):
    def setUp(self):
        self.sim = Simulator(["--max-concurrent-streams", "10"])

    def tearDown(self):
        self.sim.stop()

    def test_streams_over_the_advertised_limit_are_refused(self):
        # Three at once, unauthenticated, before the client has even read the server's
        # SETTINGS (limit 1): the two extra streams are refused with REFUSED_STREAM and the
        # first is answered (403: no provider token).
        client = RawH2(self.sim, unbounded=True, read_settings=False)
        # One write, so the server reads all three together: the first is still open (its answer
        # not yet sent) when the other two arrive.
        streams = [client.request(flush=False) for _ in range(3)]
        client.flush()
        self.assertEqual(client.status(streams[0]), (403, {"reason": "MissingProviderToken"}))
        for stream in streams[1:]:
            client.wait(stream)
            self.assertEqual(client.resets.get(stream), h2.errors.ErrorCodes.REFUSED_STREAM)
        self.assertEqual(client.server_max_streams, 1)
        self.assertEqual(client.status(client.request(bearer=self.sim.token))[0], 200)
        while client.server_max_streams != 10:  # raised once a request authenticated
            client.pump()
        # Ten held open are within the limit; an eleventh, over a limit the client has
        # acknowledged, ends the connection (nghttp2 1.52 treats it as a connection error).
        held = [client.request(bearer=self.sim.token, end=False) for _ in range(10)]
        client.request(bearer=self.sim.token, end=False)
        while client.goaway is None:
            client.pump()
        self.assertEqual(client.goaway.error_code, h2.errors.ErrorCodes.PROTOCOL_ERROR)
        self.assertEqual(client.goaway.last_stream_id, held[-1])

    def test_a_polite_client_is_held_to_one_stream_then_many(self):
        client = RawH2(self.sim)
        self.assertEqual(client.server_max_streams, 1)
        self.assertEqual(client.status(client.request(bearer=self.sim.token))[0], 200)
        while client.server_max_streams != 10:
            client.pump()
        streams = [client.request(bearer=self.sim.token) for _ in range(10)]
        self.assertEqual([client.status(s)[0] for s in streams], [200] * 10)

    def test_token_rules_on_one_connection(self):
        client = RawH2(self.sim)
        self.assertEqual(client.status(client.request(bearer=self.sim.token))[0], 200)
        newer = provider_token(self.sim.key, issued_at=time.time() - 10)
        self.assertEqual(client.status(client.request(bearer=newer)), (429, {"reason": "TooManyProviderTokenUpdates"}))
        old = provider_token(self.sim.key, issued_at=time.time() - 3700)
        other = RawH2(self.sim)
        self.assertEqual(other.status(other.request(bearer=old)), (403, {"reason": "ExpiredProviderToken"}))
        forged = provider_token(ec.generate_private_key(ec.SECP256R1()))
        self.assertEqual(other.status(other.request(bearer=forged)), (403, {"reason": "InvalidProviderToken"}))

    def test_duplicate_headers(self):
        client = RawH2(self.sim)
        stream = client.request(bearer=self.sim.token, extra=[("apns-topic", TOPIC)])
        self.assertEqual(client.status(stream), (400, {"reason": "DuplicateHeaders"}))


class FaultsAndAdmin(unittest.TestCase):
    def setUp(self):
        self.sim = Simulator()

    def tearDown(self):
        self.sim.stop()

    def test_shutdown_answers_503_then_goaway(self):
        client = RawH2(self.sim)
        self.assertEqual(client.status(client.request(bearer=self.sim.token))[0], 200)
        self.assertEqual(self.sim.admin("PUT", "/faults", {"shutdown": True}).status_code, 200)
        stream = client.request(bearer=self.sim.token)
        self.assertEqual(client.status(stream), (503, {"reason": "Shutdown"}))
        while client.goaway is None:
            client.pump()
        self.assertEqual(client.goaway.last_stream_id, stream)

    def test_error_fractions_and_goaway_after_requests(self):
        self.sim.admin("PUT", "/faults", {"tooManyRequests": 1})
        status, _, _, body = self.sim.curl(f"/3/device/{GOOD}", "-H", f"authorization: bearer {self.sim.token}", "-H", f"apns-topic: {TOPIC}")
        self.assertEqual((status, body["reason"]), (429, "TooManyRequests"))
        self.sim.admin("PUT", "/faults", {"goAwayAfterRequests": 2})
        client = RawH2(self.sim)
        first = client.request(bearer=self.sim.token)
        self.assertEqual(client.status(first)[0], 200)
        second = client.request(bearer=self.sim.token)
        self.assertEqual(client.status(second)[0], 200)
        while client.goaway is None:
            client.pump()
        self.assertEqual(client.goaway.last_stream_id, second)

    def test_admin_endpoint(self):
        self.assertEqual(self.sim.admin("GET", "/health").json(), {"status": "ok"})
        self.sim.curl(f"/3/device/{GOOD}", "-H", f"authorization: bearer {self.sim.token}", "-H", f"apns-topic: {TOPIC}")
        self.sim.curl(f"/3/device/{GONE}", "-H", f"authorization: bearer {self.sim.token}", "-H", f"apns-topic: {TOPIC}")
        stats = self.sim.admin("GET", "/stats").json()
        self.assertEqual(stats["accepted"], 1)
        self.assertEqual(stats["byReason"], {"Unregistered": 1})
        self.assertEqual(stats["acceptedByTopic"], {TOPIC: 1})
        self.assertIn('apns_sim_requests_total{status="410",reason="Unregistered"} 1', self.sim.admin("GET", "/metrics").text)
        lines = self.sim.admin("GET", "/notifications").text.splitlines()
        self.assertEqual([json.loads(l)["token"] for l in lines], [GOOD])
        bad = self.sim.admin("PUT", "/faults", {"serviceUnavailable": 2})
        self.assertEqual(bad.status_code, 400)
        self.assertIn("serviceUnavailable", bad.json()["error"]["message"])
        added = self.sim.admin("POST", "/devices", {"devices": [{"token": "0a0b0c0d", "topic": TOPIC}]})
        self.assertEqual(added.status_code, 200)
        status, _, _, _ = self.sim.curl("/3/device/0a0b0c0d", "-H", f"authorization: bearer {self.sim.token}", "-H", f"apns-topic: {TOPIC}")
        self.assertEqual(status, 200)
        self.assertEqual(self.sim.admin("POST", "/devices", {"devices": [{"token": "xyz", "topic": TOPIC}]}).status_code, 400)


class Recording(unittest.TestCase):
    def test_record_file_holds_exactly_the_accepted_notifications(self):
        folder = tempfile.mkdtemp(prefix="apns-sim-record-")
        record = os.path.join(folder, "accepted.ndjson")
        sim = Simulator(["--record-file", record], folder=folder)
        auth = ["-H", f"authorization: bearer {sim.token}", "-H", f"apns-topic: {TOPIC}"]
        for n in range(3):
            sim.curl(f"/3/device/{GOOD}", *auth, "-H", f"apns-collapse-id: c{n}")
        sim.curl(f"/3/device/{GONE}", *auth)
        sim.stop()  # SIGTERM: the simulator flushes the file before it exits
        self.assertEqual(sim.process.returncode, 0)
        with open(record) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual([(n["token"], n["collapseID"]) for n in lines], [(GOOD, "c0"), (GOOD, "c1"), (GOOD, "c2")])
        self.assertEqual(lines[0]["payload"], PAYLOAD.decode())

    def test_counts_only(self):
        sim = Simulator(["--record", "counts"])
        try:
            sim.curl(f"/3/device/{GOOD}", "-H", f"authorization: bearer {sim.token}", "-H", f"apns-topic: {TOPIC}")
            self.assertEqual(sim.admin("GET", "/stats").json()["accepted"], 1)
            self.assertEqual(sim.admin("GET", "/notifications").text, "")
        finally:
            sim.stop()


class CertificateAuthentication(unittest.TestCase):
    """Mutual TLS: a client certificate issued by a trusted CA names the topic in its UID."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="apns-sim-mtls-")
        cls.ca_key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Test Push CA")])
        cls.ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
                  .public_key(cls.ca_key.public_key()).serial_number(1)
                  .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
                  .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                  .sign(cls.ca_key, hashes.SHA256()))
        ca_path = os.path.join(cls.folder, "ca.pem")
        with open(ca_path, "wb") as f:
            f.write(cls.ca.public_bytes(serialization.Encoding.PEM))
        cls.sim = Simulator(["--client-ca", ca_path], folder=cls.folder)

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def client_certificate(self, name, attributes, signer=None):
        key = ec.generate_private_key(ec.SECP256R1())
        signer = signer or self.ca_key
        issuer = self.ca.subject if signer is self.ca_key else x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Rogue CA")])
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (x509.CertificateBuilder().subject_name(x509.Name(attributes)).issuer_name(issuer)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .sign(signer, hashes.SHA256()))
        cert_path, key_path = os.path.join(self.folder, f"{name}.pem"), os.path.join(self.folder, f"{name}.key")
        with open(cert_path, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(key_path, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        return ["--cert", cert_path, "--key", key_path]

    def test_certificate_with_topic_is_accepted_without_a_token(self):
        creds = self.client_certificate("good", [x509.NameAttribute(NameOID.USER_ID, TOPIC),
                                                 x509.NameAttribute(NameOID.COMMON_NAME, f"Apple Push Services: {TOPIC}")])
        status, _, _, _ = self.sim.curl(f"/3/device/{GOOD}", *creds)
        self.assertEqual(status, 200)
        status, _, _, body = self.sim.curl(f"/3/device/{GOOD}", *creds, "-H", "apns-topic: com.someone.else")
        self.assertEqual((status, body["reason"]), (400, "TopicDisallowed"))

    def test_certificate_naming_no_topic_is_bad(self):
        creds = self.client_certificate("nameless", [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Nobody")])
        status, _, _, body = self.sim.curl(f"/3/device/{GOOD}", *creds)
        self.assertEqual((status, body["reason"]), (403, "BadCertificate"))

    def test_certificate_from_an_untrusted_issuer_fails_the_handshake(self):
        rogue = ec.generate_private_key(ec.SECP256R1())
        creds = self.client_certificate("rogue", [x509.NameAttribute(NameOID.USER_ID, TOPIC)], signer=rogue)
        out = subprocess.run(["curl", "-s", "--http2", "--cacert", self.sim.cert, *creds, "--data-binary", "{}",
                              f"https://localhost:{self.sim.port}/3/device/{GOOD}"], capture_output=True, timeout=20)
        self.assertNotEqual(out.returncode, 0)


class BadInvocation(unittest.TestCase):
    def run_sim(self, *args):
        return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30)

    def test_bad_flags_and_files_give_one_line_and_a_nonzero_exit(self):
        cases = [
            (["--port", "notaport"], "port"),
            (["--key", "K:T:/no/such/file.pem", "--port", "0", "--no-admin"], "/no/such/file.pem"),
            (["--faults", "{\"tooManyRequests\": 7}", "--port", "0", "--no-admin"], "tooManyRequests"),
            (["--record", "everything", "--port", "0", "--no-admin"], "--record"),
            (["--certificate", "/no/cert.pem", "--private-key", "/no/key.pem", "--port", "0", "--no-admin"], "/no/cert.pem"),
        ]
        for args, mentioned in cases:
            with self.subTest(args=args):
                result = self.run_sim(*args)
                self.assertNotEqual(result.returncode, 0)
                lines = result.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, result.stderr)
                self.assertIn(mentioned, lines[0])

    def test_port_in_use(self):
        sim = Simulator()
        try:
            result = self.run_sim("--port", str(sim.port), "--no-admin")
            self.assertNotEqual(result.returncode, 0)
            self.assertIn("--port", result.stderr)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1)
        finally:
            sim.stop()


if __name__ == "__main__":
    unittest.main()
