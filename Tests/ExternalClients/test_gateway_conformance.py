"""herald-gateway's conformance suite, written from docs/gateway.md by a client that is not
Herald's: Python's ssl and asyncio-free sockets for the framed transport, PyPI's `websockets` for
the WebSocket one, the frames compiled from Schemas/gateway/gateway.proto by grpcio-tools.

Run by scripts/test-gateway.sh, which starts PostgreSQL and herald-api and passes:
  HERALD_BIN_DIR (holds herald-gateway), HERALD_API_BASE, HERALD_TEST_ADMIN_TOKEN, and the
  PostgreSQL and master-key variables scripts/with-infrastructure.sh exports.
Each test connects from its own loopback address (127.0.x.y), so the per-address limits of one
test never touch another; the limits' own tests use fixed addresses.

Pushes, acknowledgements, revokes and the slow reader are driven through the gateway's delivery
port (Schemas/gateway/deliveries.proto), as herald-sender drives it.
"""

import asyncio
import base64
import concurrent.futures
import datetime
import hashlib
import hmac
import ipaddress
import itertools
import json
import os
import pathlib
import random
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request
import uuid

from test_gateway_frames import compile_frames, pb

pb_deliveries = compile_frames("deliveries")

BIN = pathlib.Path(os.environ.get("HERALD_BIN_DIR", ".build/debug"))
API = os.environ.get("HERALD_API_BASE", "")
ADMIN = os.environ.get("HERALD_TEST_ADMIN_TOKEN", "")
HELLO_TIMEOUT_MS = 1500
HEARTBEAT_SECONDS = 1
IDLE_TIMEOUT_SECONDS = 2
FAILURES_PER_MINUTE = 3
CONNECTIONS_PER_SECOND = 5
CONNECTION_BURST = 10
ACK_TIMEOUT_MS = 1000
MAX_UNACKNOWLEDGED = 4
THROTTLED_SOURCE = "127.0.0.9"
RATE_SOURCE = "127.0.0.10"
_sources = (f"127.0.{a}.{b}" for a, b in itertools.product(range(1, 250), range(2, 250)))


def api(method, path, key, body=None):
    request = urllib.request.Request(
        API + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
            return json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        raise AssertionError(f"{method} {path}: {error.code} {error.read()!r}") from None


def sql(query):
    """One value from PostgreSQL (the database scripts/with-infrastructure.sh runs), through psql."""
    environment = dict(os.environ, PGPASSWORD=os.environ["HERALD_POSTGRES_PASSWORD"])
    result = subprocess.run(
        ["psql", "-h", os.environ["HERALD_POSTGRES_HOST"], "-p", os.environ["HERALD_POSTGRES_PORT"],
         "-U", os.environ["HERALD_POSTGRES_USER"], "-d", os.environ["HERALD_POSTGRES_DATABASE"], "-tAc", query],
        env=environment, capture_output=True, text=True, check=True)
    return result.stdout.strip()


def eventually(condition, timeout=30):
    """Waits for `condition()` to hold, asking again every 50 ms (the one poll of this suite, for
    state only PostgreSQL or a starting process can tell); fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not hold in time")
        time.sleep(0.05)


def free_port():
    """A free port below the kernel's ephemeral range (no outgoing connection takes it first)."""
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    for _ in range(500):
        port = random.randrange(10000, max(low, 11000))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                pass
    raise RuntimeError("no free port")


def self_signed(directory):
    """A P-256 certificate for 127.0.0.1 and localhost, and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "herald-gateway test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(key, hashes.SHA256()))
    cert_file = pathlib.Path(directory) / "gateway.crt"
    key_file = pathlib.Path(directory) / "gateway.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_file, key_file


class Gateway:
    """A herald-gateway process on free ports, with the suite's short timeouts and low limits."""

    def __init__(self, directory, **extra):
        self.cert, key = self_signed(directory)
        self.port = free_port()
        self.metrics_port = free_port()
        self.delivery_port = free_port()
        self.log = open(pathlib.Path(directory) / f"gateway-{self.port}.log", "w+")
        environment = dict(os.environ)
        environment.update({
            "HERALD_GATEWAY_HOST": "127.0.0.1", "HERALD_GATEWAY_PORT": str(self.port),
            "HERALD_GATEWAY_METRICS_HOST": "127.0.0.1", "HERALD_GATEWAY_METRICS_PORT": str(self.metrics_port),
            "HERALD_GATEWAY_TLS_CERTIFICATE_FILE": str(self.cert), "HERALD_GATEWAY_TLS_KEY_FILE": str(key),
            "HERALD_GATEWAY_HELLO_TIMEOUT_MS": str(HELLO_TIMEOUT_MS),
            "HERALD_GATEWAY_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS),
            "HERALD_GATEWAY_IDLE_TIMEOUT_SECONDS": str(IDLE_TIMEOUT_SECONDS),
            "HERALD_GATEWAY_AUTH_FAILURES_PER_MINUTE": str(FAILURES_PER_MINUTE),
            "HERALD_GATEWAY_CONNECTIONS_PER_SECOND": str(CONNECTIONS_PER_SECOND),
            "HERALD_GATEWAY_CONNECTION_BURST": str(CONNECTION_BURST),
            "HERALD_GATEWAY_TICK_MS": "50",
            "HERALD_GATEWAY_ACK_TIMEOUT_MS": str(ACK_TIMEOUT_MS),
            "HERALD_GATEWAY_MAX_UNACKNOWLEDGED": str(MAX_UNACKNOWLEDGED),
            "HERALD_GATEWAY_DELIVERY_HOST": "127.0.0.1", "HERALD_GATEWAY_DELIVERY_PORT": str(self.delivery_port),
            "HERALD_GATEWAY_DELIVERY_ADDRESS": f"127.0.0.1:{self.delivery_port}",
            "HERALD_GATEWAY_NAME": f"conformance-{self.port}",
        })
        environment.update(extra)
        self.process = subprocess.Popen([str(BIN / "herald-gateway")], env=environment,
                                        stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self.wait_until_listening()
        except BaseException:
            # A gateway that never came up is not left running (it would renew its lease for ever).
            self.process.kill()
            self.process.wait(timeout=30)
            raise

    def wait_until_listening(self):
        def listening():
            if self.process.poll() is not None:
                raise RuntimeError(f"herald-gateway exited: {self.output()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/readyz", timeout=2):
                    pass
                with socket.create_connection(("127.0.0.1", self.port), timeout=2):
                    return True
            except OSError:
                return False

        try:
            eventually(listening, timeout=60)
        except AssertionError:
            raise RuntimeError(f"herald-gateway did not listen within 60 s: {self.output()}") from None

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as response:
            return response.read().decode()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.log.close()

    def tls(self):
        context = ssl.create_default_context(cafile=str(self.cert))
        return context


class Framed:
    """One framed TLS connection, from a source address of its own unless one is given."""

    def __init__(self, gateway, source=None, receive_buffer=None):
        self.source = source or next(_sources)
        raw = socket.socket()
        if receive_buffer:
            # Set before connecting: the window the client offers is fixed at the handshake.
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        raw.bind((self.source, 0))
        raw.settimeout(15)
        raw.connect(("127.0.0.1", gateway.port))
        self.sock = gateway.tls().wrap_socket(raw, server_hostname="127.0.0.1")
        self.buffer = b""

    def send(self, frame):
        body = frame.SerializeToString()
        self.sock.sendall(struct.pack(">I", len(body)) + body)

    def send_raw(self, data):
        self.sock.sendall(data)

    def receive(self, timeout=15):
        """The next frame, or None when the server closed the connection."""
        self.sock.settimeout(timeout)
        while True:
            if len(self.buffer) >= 4:
                (length,) = struct.unpack(">I", self.buffer[:4])
                if len(self.buffer) >= 4 + length:
                    frame = pb.Frame()
                    frame.ParseFromString(self.buffer[4:4 + length])
                    self.buffer = self.buffer[4 + length:]
                    return frame
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, ssl.SSLError):
                return None
            if not chunk:
                return None
            self.buffer += chunk

    def quiet_for(self, seconds):
        """Whether nothing at all (no frame, no close) arrives within `seconds`."""
        if len(self.buffer) >= 4:
            return False
        self.sock.settimeout(seconds)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            return True
        except (ConnectionResetError, ssl.SSLError):
            return False
        self.buffer += chunk
        return False

    def closed(self, timeout=15):
        """Whether the server closes the connection (nothing more arrives) within `timeout`."""
        return self.receive(timeout) is None

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def hello(key, token, environment="sandbox", signature="", versions=(1,)):
    frame = pb.Frame()
    frame.hello.versions.extend(versions)
    frame.hello.client_key = key
    frame.hello.device_token = token
    frame.hello.environment = environment
    frame.hello.alias_signature = signature
    return frame


def ping(nonce):
    frame = pb.Frame()
    frame.ping.nonce = nonce
    return frame


def new_token():
    return os.urandom(32).hex()


def metric(gateway, sample):
    """One sample's value in the gateway's metrics."""
    for line in gateway.metrics().splitlines():
        name, _, value = line.rpartition(" ")
        if name == sample:
            return float(value)
    raise AssertionError(f"{sample} is not in the gateway's metrics")


def delivery_token():
    """The bearer token of the delivery port: HMAC-SHA256 of its label under the master key."""
    key = os.environ["HERALD_MASTER_KEY"].encode()
    return hmac.new(key, b"herald-gateway-deliveries-v1", hashlib.sha256).hexdigest()


def deliver(gateway, deliveries, token=None):
    """POSTs a Deliveries message to the gateway's delivery port: (status, body). Each delivery is
    (device id, Push) or, for a recall, (device id, Revoke)."""
    message = pb_deliveries.Deliveries()
    for device_id, push in deliveries:
        item = message.deliveries.add()
        item.device_id = device_id
        if isinstance(push, pb.Revoke):
            item.revoke.CopyFrom(push)
        else:
            item.push.CopyFrom(push)
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.delivery_port}/v1/deliveries", method="POST", data=message.SerializeToString(),
        headers={"Authorization": f"Bearer {token or delivery_token()}", "Content-Type": "application/x-protobuf"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            results = pb_deliveries.DeliveryResults()
            results.ParseFromString(response.read())
            return response.status, results
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def a_push(payload=b'{"aps":{"alert":"hi"}}'):
    push = pb.Push()
    push.push_id = uuid.uuid4().bytes
    push.collapse_id = "sale"
    push.payload = payload
    push.push_type = "alert"
    push.priority = 10
    return push


class GatewayCase(unittest.TestCase):
    gateway = None

    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.mkdtemp(prefix="herald-gateway-test-")
        cls.gateway = Gateway(cls.directory)
        # Stopped even when the rest of the set-up fails.
        cls.addClassCleanup(cls.gateway.stop)
        suffix = uuid.uuid4().hex[:8]
        created = api("POST", "/v1/apps", ADMIN, {"name": "gateway conformance", "bundle_id": f"com.herald.gw.{suffix}"})
        cls.app = created["app"]["id"]
        cls.client_key = created["client_key"]["key"]
        cls.server_key = created["server_key"]["key"]
        cls.identity_secret = created.get("identity_secret")

    def register(self, environment="sandbox", alias=None):
        return self.register_device(environment, alias)[0]

    def register_device(self, environment="sandbox", alias=None):
        """A new device's token and registration id."""
        token = new_token()
        body = {"token": token, "environment": environment}
        if alias:
            body["alias"] = alias
        registered = api("POST", "/v1/devices", self.server_key, body)
        return token, int(registered["registration_id"])

    def connect(self, source=None):
        connection = Framed(self.gateway, source)
        self.addCleanup(connection.close)
        return connection

    def welcomed(self, source=None, token=None):
        connection = self.connect(source)
        connection.send(hello(self.client_key, token or self.register()))
        frame = connection.receive()
        self.assertEqual(frame.WhichOneof("kind"), "welcome", frame)
        return connection, frame.welcome

    def assertError(self, frame, code, fatal=True):
        self.assertIsNotNone(frame, f"the connection closed without the error {code}")
        self.assertEqual(frame.WhichOneof("kind"), "error", frame)
        self.assertEqual(frame.error.code, code, frame.error.message)
        self.assertEqual(frame.error.fatal, fatal)
        self.assertTrue(frame.error.message)

    def assertRefused(self, connection, code):
        frame = connection.receive()
        self.assertError(frame, code)
        self.assertTrue(connection.closed(), f"the connection stays open after the fatal {code}")
        return frame


class Conversation(GatewayCase):
    def test_hello_is_welcomed_with_the_connections_timings(self):
        _, welcome = self.welcomed()
        self.assertEqual(welcome.version, 1)
        self.assertEqual(welcome.heartbeat_seconds, HEARTBEAT_SECONDS)
        self.assertEqual(welcome.idle_timeout_seconds, IDLE_TIMEOUT_SECONDS)
        self.assertEqual(welcome.max_frame_bytes, 16384)
        self.assertEqual(welcome.ack_timeout_milliseconds, ACK_TIMEOUT_MS)
        self.assertTrue(welcome.connection_id)

    def test_ping_is_answered_with_the_same_nonce(self):
        connection, _ = self.welcomed()
        for nonce in (1, 2**63 + 5):
            connection.send(ping(nonce))
            frame = connection.receive()
            self.assertEqual(frame.WhichOneof("kind"), "pong", frame)
            self.assertEqual(frame.pong.nonce, nonce)

    def test_token_in_upper_case_is_the_same_device(self):
        token = self.register()
        self.welcomed(token=token.upper())

    def test_the_highest_common_version_is_chosen(self):
        connection = self.connect()
        connection.send(hello(self.client_key, self.register(), versions=(7, 1, 3)))
        self.assertEqual(connection.receive().welcome.version, 1)

    def test_a_newer_connection_replaces_the_older(self):
        token = self.register()
        older, _ = self.welcomed(token=token)
        newer, _ = self.welcomed(token=token)
        self.assertRefused(older, "replaced")
        newer.send(ping(9))
        self.assertEqual(newer.receive().pong.nonce, 9)

    def test_a_pong_from_the_client_is_fine(self):
        connection, _ = self.welcomed()
        pong = pb.Frame()
        pong.pong.nonce = 4
        connection.send(pong)
        connection.send(ping(5))
        self.assertEqual(connection.receive().pong.nonce, 5)

    def test_an_unknown_field_alone_is_ignored(self):
        connection, _ = self.welcomed()
        unknown = bytes([0x98, 0x06, 0x01])  # field 99 = 1
        connection.send_raw(struct.pack(">I", len(unknown)) + unknown)
        connection.send(ping(6))
        self.assertEqual(connection.receive().pong.nonce, 6)


class ConnectionRules(GatewayCase):
    def test_a_frame_before_the_hello_is_hello_required(self):
        connection = self.connect()
        connection.send(ping(1))
        self.assertRefused(connection, "hello_required")

    def test_no_version_in_common_is_unsupported_version(self):
        connection = self.connect()
        connection.send(hello(self.client_key, self.register(), versions=(2, 99)))
        frame = self.assertRefused(connection, "unsupported_version")
        self.assertEqual(list(frame.error.supported_versions), [1])

    def test_a_frame_between_hello_and_welcome_is_malformed(self):
        connection = self.connect()
        first = hello(self.client_key, self.register()).SerializeToString()
        second = ping(1).SerializeToString()
        connection.send_raw(struct.pack(">I", len(first)) + first + struct.pack(">I", len(second)) + second)
        self.assertRefused(connection, "malformed_frame")

    def test_a_second_hello_is_malformed(self):
        connection, _ = self.welcomed()
        connection.send(hello(self.client_key, self.register()))
        self.assertRefused(connection, "malformed_frame")

    def test_a_frame_only_the_server_sends_is_malformed(self):
        connection, _ = self.welcomed()
        frame = pb.Frame()
        frame.welcome.version = 1
        connection.send(frame)
        self.assertRefused(connection, "malformed_frame")

    def test_a_length_of_zero_is_malformed(self):
        connection, _ = self.welcomed()
        connection.send_raw(struct.pack(">I", 0))
        self.assertRefused(connection, "malformed_frame")

    def test_bytes_that_are_not_a_frame_are_malformed(self):
        connection = self.connect()
        connection.send_raw(struct.pack(">I", 4) + bytes([0x0A, 0x64, 0x01, 0x02]))
        self.assertRefused(connection, "malformed_frame")

    def test_a_length_past_the_maximum_is_frame_too_large(self):
        connection = self.connect()
        connection.send_raw(struct.pack(">I", 16385))
        self.assertRefused(connection, "frame_too_large")

    def test_a_frame_of_the_maximum_size_is_read(self):
        connection, _ = self.welcomed()
        body = ping(1).SerializeToString()
        # A ping padded with an unknown bytes field (field 100: tag a2 06, a 2-byte length) to
        # exactly 16,384 bytes, the largest frame.
        padding = 16384 - len(body) - 4
        payload = body + bytes([0xA2, 0x06, 0x80 | (padding & 0x7F), padding >> 7]) + b"x" * padding
        self.assertEqual(len(payload), 16384)
        connection.send_raw(struct.pack(">I", len(payload)) + payload)
        reply = connection.receive()
        self.assertEqual(reply.WhichOneof("kind"), "pong", reply)

    def test_the_hello_is_held_to_16384_bytes_whatever_the_connections_limit(self):
        gateway = Gateway(tempfile.mkdtemp(prefix="herald-gateway-large-"), HERALD_GATEWAY_MAX_FRAME_BYTES="32768")
        self.addCleanup(gateway.stop)
        connection = Framed(gateway)
        self.addCleanup(connection.close)
        connection.send_raw(struct.pack(">I", 20000))
        self.assertRefused(connection, "frame_too_large")
        connection = Framed(gateway)
        self.addCleanup(connection.close)
        connection.send(hello(self.client_key, self.register()))
        self.assertEqual(connection.receive().welcome.max_frame_bytes, 32768)
        body = ping(2).SerializeToString()
        padding = 20000 - len(body) - 5
        payload = body + bytes([0xA2, 0x06, 0x80 | (padding & 0x7F), 0x80 | ((padding >> 7) & 0x7F), padding >> 14])
        payload += b"x" * padding
        connection.send_raw(struct.pack(">I", len(payload)) + payload)
        self.assertEqual(connection.receive().pong.nonce, 2)

    def test_no_hello_in_time_is_hello_timeout(self):
        connection = self.connect()
        connection.send_raw(struct.pack(">I", 10))  # a length, and then nothing
        started = time.monotonic()
        self.assertRefused(connection, "hello_timeout")
        self.assertGreaterEqual(time.monotonic() - started, HELLO_TIMEOUT_MS / 1000 - 0.5)

    def test_a_connection_that_sends_nothing_is_closed_at_the_hellos_deadline(self):
        connection = self.connect()
        self.assertTrue(connection.closed(timeout=HELLO_TIMEOUT_MS / 1000 + 10))

    def test_silence_after_the_welcome_is_idle_timeout(self):
        connection, _ = self.welcomed()
        self.assertRefused(connection, "idle_timeout")

    def test_pings_keep_a_connection_open_past_the_idle_timeout(self):
        connection, _ = self.welcomed()
        started = time.monotonic()
        nonce = 0
        while time.monotonic() - started < IDLE_TIMEOUT_SECONDS * 2:
            nonce += 1
            connection.send(ping(nonce))
            self.assertEqual(connection.receive().pong.nonce, nonce)
            # Half a heartbeat in which the server sends nothing: no idle_timeout, no close.
            self.assertTrue(connection.quiet_for(HEARTBEAT_SECONDS / 2))

    def test_an_ack_for_a_delivery_never_sent_is_unknown_delivery_and_not_fatal(self):
        connection, _ = self.welcomed()
        ack = pb.Frame()
        ack.ack.delivery = 12
        connection.send(ack)
        self.assertError(connection.receive(), "unknown_delivery", fatal=False)
        connection.send(ping(3))
        self.assertEqual(connection.receive().pong.nonce, 3)


class Authentication(GatewayCase):
    def test_an_unknown_key_is_unknown_key(self):
        connection = self.connect()
        connection.send(hello("hc_" + "A" * 43, self.register()))
        self.assertRefused(connection, "unknown_key")

    def test_a_server_key_is_not_a_client_key(self):
        connection = self.connect()
        connection.send(hello(self.server_key, self.register()))
        self.assertRefused(connection, "unknown_key")

    def test_an_unregistered_token_is_unknown_device(self):
        connection = self.connect()
        connection.send(hello(self.client_key, new_token()))
        self.assertRefused(connection, "unknown_device")

    def test_the_wrong_environment_is_unknown_device(self):
        connection = self.connect()
        connection.send(hello(self.client_key, self.register(environment="sandbox"), environment="production"))
        self.assertRefused(connection, "unknown_device")

    def test_a_token_that_is_not_hexadecimal_is_unknown_device(self):
        connection = self.connect()
        connection.send(hello(self.client_key, "not a token"))
        self.assertRefused(connection, "unknown_device")

    def test_another_apps_device_is_unknown_device(self):
        other = api("POST", "/v1/apps", ADMIN, {"name": "gateway other", "bundle_id": f"com.herald.gw.o{uuid.uuid4().hex[:8]}"})
        token = new_token()
        api("POST", "/v1/devices", other["server_key"]["key"], {"token": token, "environment": "sandbox"})
        connection = self.connect()
        connection.send(hello(self.client_key, token))
        self.assertRefused(connection, "unknown_device")

    def test_a_device_on_an_alias_needs_its_signature(self):
        self.assertTrue(self.identity_secret, "a new app verifies identities and has an identity secret")
        alias = f"user-{uuid.uuid4().hex[:8]}"
        token = self.register(alias=alias)
        connection = self.connect()
        connection.send(hello(self.client_key, token))
        self.assertRefused(connection, "alias_signature_required")

        connection = self.connect()
        connection.send(hello(self.client_key, token, signature=f"v2.{int(time.time()) + 3600}." + "0" * 64))
        self.assertRefused(connection, "alias_signature_invalid")

        expires = int(time.time()) - 10
        connection = self.connect()
        connection.send(hello(self.client_key, token, signature=self.sign(alias, token, expires)))
        self.assertRefused(connection, "alias_signature_expired")

        connection = self.connect()
        connection.send(hello(self.client_key, token, signature=self.sign(alias, token, int(time.time()) + 3600)))
        self.assertEqual(connection.receive().WhichOneof("kind"), "welcome")

    def sign(self, alias, token, expires):
        # docs/security.md: HMAC-SHA256 of herald-alias-v2, the token in lower-case hexadecimal, the
        # alias and EXPIRES, one per line, keyed with the identity secret's text.
        message = f"herald-alias-v2\n{token.lower()}\n{alias}\n{expires}".encode()
        digest = hmac.new(self.identity_secret.encode(), message, hashlib.sha256).hexdigest()
        return f"v2.{expires}.{digest}"

    def test_failures_from_one_address_are_throttled_but_a_valid_hello_is_not(self):
        for _ in range(FAILURES_PER_MINUTE):
            connection = self.connect(THROTTLED_SOURCE)
            connection.send(hello("hc_" + "B" * 43, self.register()))
            self.assertRefused(connection, "unknown_key")
        connection = self.connect(THROTTLED_SOURCE)
        connection.send(hello("hc_" + "B" * 43, self.register()))
        frame = self.assertRefused(connection, "too_many_failed_authentications")
        self.assertGreater(frame.error.retry_after_milliseconds, 0)
        self.welcomed(source=THROTTLED_SOURCE)

    def test_connections_faster_than_allowed_are_too_many_connections(self):
        refused = []
        started = time.monotonic()
        attempts = CONNECTION_BURST + 3 * CONNECTIONS_PER_SECOND
        for _ in range(attempts):
            connection = self.connect(RATE_SOURCE)
            connection.send(hello(self.client_key, "00"))
            frame = connection.receive()
            if frame is not None and frame.error.code == "too_many_connections":
                self.assertGreaterEqual(frame.error.retry_after_milliseconds, 1000)
                refused.append(frame)
        elapsed = time.monotonic() - started
        # The burst, plus what the bucket refilled while the test ran, may connect.
        allowed = CONNECTION_BURST + int(CONNECTIONS_PER_SECOND * elapsed) + 1
        self.assertGreaterEqual(len(refused), attempts - allowed, f"{len(refused)} refused in {elapsed:.2f} s")
        self.assertGreater(len(refused), 0)


class WebSocket(GatewayCase):
    def ws(self, coroutine):
        return asyncio.run(coroutine)

    async def open(self, **options):
        import websockets

        return await websockets.connect(
            f"wss://127.0.0.1:{self.gateway.port}/v1/connect", ssl=self.gateway.tls(),
            subprotocols=["herald.gateway.v1"], **options)

    def test_hello_ping_over_websocket(self):
        token = self.register()

        async def conversation():
            async with await self.open() as socket:
                self.assertEqual(socket.subprotocol, "herald.gateway.v1")
                await socket.send(hello(self.client_key, token).SerializeToString())
                welcome = pb.Frame.FromString(await asyncio.wait_for(socket.recv(), 15))
                self.assertEqual(welcome.WhichOneof("kind"), "welcome", welcome)
                await socket.send(ping(77).SerializeToString())
                pong = pb.Frame.FromString(await asyncio.wait_for(socket.recv(), 15))
                self.assertEqual(pong.pong.nonce, 77)
                # WebSocket's own ping is answered too.
                waiter = await socket.ping()
                await asyncio.wait_for(waiter, 15)

        self.ws(conversation())

    def test_a_text_message_is_malformed(self):
        async def conversation():
            import websockets

            async with await self.open() as socket:
                await socket.send("hello")
                frame = pb.Frame.FromString(await asyncio.wait_for(socket.recv(), 15))
                self.assertError(frame, "malformed_frame")
                with self.assertRaises(websockets.ConnectionClosed):
                    await asyncio.wait_for(socket.recv(), 15)

        self.ws(conversation())

    def test_the_same_errors_as_framed(self):
        async def conversation():
            async with await self.open() as socket:
                await socket.send(hello("hc_" + "C" * 43, self.register()).SerializeToString())
                self.assertError(pb.Frame.FromString(await asyncio.wait_for(socket.recv(), 15)), "unknown_key")

        self.ws(conversation())

    def test_a_message_past_the_maximum_is_frame_too_large(self):
        async def conversation():
            async with await self.open() as socket:
                await socket.send(b"\x00" * 16385)
                self.assertError(pb.Frame.FromString(await asyncio.wait_for(socket.recv(), 15)), "frame_too_large")

        self.ws(conversation())

    def test_an_unmasked_frame_closes_the_connection_with_1002(self):
        raw = socket.create_connection(("127.0.0.1", self.gateway.port), timeout=15)
        with self.gateway.tls().wrap_socket(raw, server_hostname="127.0.0.1") as connection:
            key = base64.b64encode(os.urandom(16)).decode()
            connection.sendall(
                f"GET /v1/connect HTTP/1.1\r\nHost: gateway\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
            response = b""
            while b"\r\n\r\n" not in response:
                response += connection.recv(4096)
            self.assertIn(b" 101 ", response.split(b"\r\n")[0])
            rest = response.split(b"\r\n\r\n", 1)[1]
            body = hello(self.client_key, "00").SerializeToString()
            connection.sendall(bytes([0x82, len(body)]) + body)  # FIN + binary, no mask bit
            data = rest
            while True:
                chunk = connection.recv(4096)
                if not chunk:
                    break
                data += chunk
            self.assertGreaterEqual(len(data), 4, data)
            self.assertEqual(data[0] & 0x0F, 0x8, "a close frame")
            self.assertEqual(struct.unpack(">H", data[2:4])[0], 1002)

    def plain_request(self, request):
        raw = socket.create_connection(("127.0.0.1", self.gateway.port), timeout=15)
        with self.gateway.tls().wrap_socket(raw, server_hostname="127.0.0.1") as connection:
            connection.sendall(request)
            data = b""
            while True:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        return head.split(b"\r\n")[0].decode(), json.loads(body)

    def test_a_request_that_is_not_an_upgrade_gets_a_json_error(self):
        status, body = self.plain_request(b"GET /v1/connect HTTP/1.1\r\nHost: gateway\r\n\r\n")
        self.assertIn(" 426 ", status)
        self.assertEqual(body["error"]["code"], "websocket_required")
        status, body = self.plain_request(b"GET /elsewhere HTTP/1.1\r\nHost: gateway\r\n\r\n")
        self.assertIn(" 404 ", status)
        self.assertEqual(body["error"]["code"], "not_found")


class Deliveries(GatewayCase):
    """What a sender sees on the delivery port, and what the client sees of it."""

    def connected_device(self):
        token, device_id = self.register_device()
        connection, _ = self.welcomed(token=token)
        # The delivery reaches a device once its connection is in the gateway's directory: at the
        # welcome (the directory is written before it).
        return connection, device_id

    def test_a_push_reaches_the_connection_and_its_ack_is_reported(self):
        connection, device_id = self.connected_device()
        push = a_push()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            answer = pool.submit(deliver, self.gateway, [(device_id, push)])
            frame = connection.receive()
            self.assertEqual(frame.WhichOneof("kind"), "push", frame)
            self.assertEqual(frame.push.delivery, 1)
            self.assertEqual(frame.push.push_id, push.push_id)
            self.assertEqual(frame.push.collapse_id, "sale")
            self.assertEqual(frame.push.payload, push.payload)
            ack = pb.Frame()
            ack.ack.delivery = frame.push.delivery
            connection.send(ack)
            status, results = answer.result(timeout=30)
        self.assertEqual(status, 200)
        self.assertEqual(list(results.acknowledged_device_ids), [device_id])

    def test_a_push_not_acknowledged_in_time_is_not_reported_and_its_late_ack_is_unknown(self):
        connection, device_id = self.connected_device()
        started = time.monotonic()
        status, results = deliver(self.gateway, [(device_id, a_push())])
        self.assertEqual(status, 200)
        self.assertEqual(list(results.acknowledged_device_ids), [])
        self.assertGreaterEqual(time.monotonic() - started, ACK_TIMEOUT_MS / 1000 - 0.1)
        frame = connection.receive()
        self.assertEqual(frame.WhichOneof("kind"), "push")
        ack = pb.Frame()
        ack.ack.delivery = frame.push.delivery
        connection.send(ack)
        self.assertError(connection.receive(), "unknown_delivery", fatal=False)

    def test_a_revoke_reaches_the_connection_unacknowledged_and_is_reported_written(self):
        connection, device_id = self.connected_device()
        revoke = pb.Revoke()
        revoke.push_id = uuid.uuid4().bytes
        revoke.collapse_id = "sale"
        status, results = deliver(self.gateway, [(device_id, revoke)])
        self.assertEqual((status, list(results.acknowledged_device_ids)), (200, [device_id]))
        frame = connection.receive()
        self.assertEqual(frame.WhichOneof("kind"), "revoke", frame)
        self.assertEqual((frame.revoke.push_id, frame.revoke.collapse_id), (revoke.push_id, "sale"))
        # A revoke takes no delivery number: the next push is still delivery 1.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            answer = pool.submit(deliver, self.gateway, [(device_id, a_push())])
            self.assertEqual(connection.receive().push.delivery, 1)
            answer.result(timeout=30)
        _, absent = self.register_device()
        status, results = deliver(self.gateway, [(absent, revoke)])
        self.assertEqual((status, list(results.acknowledged_device_ids)), (200, []), "not connected: not reached")

    def test_a_device_not_connected_is_not_reached(self):
        _, device_id = self.register_device()
        status, results = deliver(self.gateway, [(device_id, a_push())])
        self.assertEqual((status, list(results.acknowledged_device_ids)), (200, []))

    def test_deliveries_numbered_per_connection_and_only_the_acknowledged_reported(self):
        first, first_id = self.connected_device()
        second, second_id = self.connected_device()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            answer = pool.submit(deliver, self.gateway, [(first_id, a_push()), (second_id, a_push()), (first_id, a_push())])
            numbers = [first.receive().push.delivery, first.receive().push.delivery]
            self.assertEqual(numbers, [1, 2])
            self.assertEqual(second.receive().push.delivery, 1)
            for number in numbers:
                ack = pb.Frame()
                ack.ack.delivery = number
                first.send(ack)
            status, results = answer.result(timeout=30)
        self.assertEqual(sorted(results.acknowledged_device_ids), [first_id, first_id])

    def test_a_slow_reader_is_told_and_closed(self):
        connection, device_id = self.connected_device()
        status, results = deliver(self.gateway, [(device_id, a_push()) for _ in range(MAX_UNACKNOWLEDGED + 1)])
        self.assertEqual((status, list(results.acknowledged_device_ids)), (200, []))
        kinds = []
        while True:
            frame = connection.receive()
            if frame is None:
                break
            kinds.append(frame.WhichOneof("kind"))
            if kinds[-1] == "error":
                self.assertError(frame, "slow_reader")
        self.assertEqual(kinds, ["push"] * MAX_UNACKNOWLEDGED + ["error"])

    def test_a_client_that_reads_nothing_is_not_read_and_is_closed(self):
        # A client that sends pings and reads no pongs, with a small receive window: the server's
        # pongs pile up until it cannot write and it stops reading (the client's sends block; the
        # unit tests show the reads held back), and past the ack timeout it closes the connection
        # (slow_reader) — without waiting for ever on its error frame, which nobody reads.
        token, device_id = self.register_device()
        framed = Framed(self.gateway, receive_buffer=4096)
        self.addCleanup(framed.close)
        framed.send(hello(self.client_key, token))
        self.assertEqual(framed.receive().WhichOneof("kind"), "welcome")
        connection = framed.sock
        closed_unwritten = self.counter("herald_gateway_closed_unwritten_total")
        slow_readers = self.counter('herald_gateway_errors_total{code="slow_reader"}')
        one = ping(7).SerializeToString()
        batch = (struct.pack(">I", len(one)) + one) * 1000
        connection.settimeout(0.5)
        sent = 0
        blocked = False
        while not blocked and sent < 100_000_000:
            try:
                connection.sendall(batch)
                sent += len(batch)
            except TimeoutError:
                blocked = True
        self.assertTrue(blocked, f"the gateway read {sent} bytes of pings from a client that read no pong")
        eventually(lambda: self.counter("herald_gateway_closed_unwritten_total") == closed_unwritten + 1, timeout=20)
        present = f"SELECT count(*) FROM gateway_presence WHERE device_id = {device_id}"
        eventually(lambda: sql(present) == "0", timeout=20)
        self.assertEqual(self.counter('herald_gateway_errors_total{code="slow_reader"}'), slow_readers + 1)

    def counter(self, sample):
        return metric(self.gateway, sample)

    def test_the_wrong_token_and_a_malformed_body_are_refused(self):
        status, body = deliver(self.gateway, [], token="0" * 64)
        self.assertEqual((status, body["error"]["code"]), (401, "unknown_key"))
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.gateway.delivery_port}/v1/deliveries", method="POST", data=b"\xff\xff",
            headers={"Authorization": f"Bearer {delivery_token()}"})
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        self.assertEqual(refused.exception.code, 400)
        self.assertEqual(json.loads(refused.exception.read())["error"]["code"], "malformed_deliveries")

    def test_presence_names_the_delivery_address(self):
        _, device_id = self.connected_device()
        query = f"SELECT g.delivery_address FROM gateway_presence p JOIN gateways g ON g.id = p.gateway_id WHERE p.device_id = {device_id}"
        eventually(lambda: sql(query) == f"127.0.0.1:{self.gateway.delivery_port}")


class Operations(GatewayCase):
    def test_metrics_count_connections_welcomes_and_errors(self):
        self.welcomed()
        connection = self.connect()
        connection.send(ping(1))
        self.assertRefused(connection, "hello_required")
        text = self.gateway.metrics()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
        self.assertGreaterEqual(values["herald_gateway_welcomes_total"], 1)
        self.assertGreaterEqual(values['herald_gateway_errors_total{code="hello_required"}'], 1)
        self.assertGreaterEqual(values["herald_gateway_tls_handshakes_total"], 2)
        self.assertIn("herald_gateway_devices_connected", values)
        self.assertNotIn(self.client_key, text)

    def test_presence_follows_connections(self):
        token = self.register()
        present = f"SELECT count(*) FROM gateway_presence p JOIN devices d ON d.id = p.device_id JOIN gateways g ON g.id = p.gateway_id WHERE d.token = decode('{token}', 'hex') AND g.lease_expires_at > now()"
        connection, _ = self.welcomed(token=token)
        eventually(lambda: sql(present) == "1")
        connection.close()
        eventually(lambda: sql(present) == "0")

    def test_the_welcome_comes_once_presence_is_written(self):
        # Presence written every 2 s here, so a welcome sent before the write would be seen.
        gateway = Gateway(tempfile.mkdtemp(prefix="herald-gateway-presence-"), HERALD_GATEWAY_PRESENCE_FLUSH_MS="2000")
        try:
            for _ in range(3):
                token = self.register()
                present = f"SELECT count(*) FROM gateway_presence p JOIN devices d ON d.id = p.device_id JOIN gateways g ON g.id = p.gateway_id WHERE d.token = decode('{token}', 'hex') AND g.lease_expires_at > now()"
                connection = Framed(gateway)
                self.addCleanup(connection.close)
                connection.send(hello(self.client_key, token))
                self.assertEqual(connection.receive().WhichOneof("kind"), "welcome")
                # A push sent now is routed to this connection.
                self.assertEqual(sql(present), "1")
            metrics = gateway.metrics()
            self.assertIn("herald_gateway_welcomes_before_presence_total 0", metrics)
        finally:
            gateway.stop()

    def test_sigterm_sends_a_goaway_then_closes(self):
        gateway = Gateway(tempfile.mkdtemp(prefix="herald-gateway-drain-"), HERALD_GATEWAY_GOAWAY_MIN_MS="1500",
                          HERALD_GATEWAY_GOAWAY_MAX_MS="4000")
        try:
            connection = Framed(gateway)
            self.addCleanup(connection.close)
            connection.send(hello(self.client_key, self.register()))
            self.assertEqual(connection.receive().WhichOneof("kind"), "welcome")
            gateway.process.send_signal(signal.SIGTERM)
            frame = connection.receive()
            self.assertEqual(frame.WhichOneof("kind"), "goaway", frame)
            self.assertEqual(frame.goaway.reconnect_after_min_milliseconds, 1500)
            self.assertEqual(frame.goaway.reconnect_after_max_milliseconds, 4000)
            self.assertTrue(connection.closed())
            self.assertEqual(gateway.process.wait(timeout=30), 0)
            # It gave its presence up as it stopped: no lease of it is left.
            self.assertEqual(sql(f"SELECT count(*) FROM gateways WHERE name = 'conformance-{gateway.port}'"), "0")
        finally:
            gateway.stop()

    def test_a_client_far_behind_still_gets_the_goaway(self):
        # A client that reads, but slowly: when the gateway drains, its goaway waits behind
        # everything the client has not read yet. The gateway closes the connection once the
        # goaway is written, not at the first sweep with nothing to acknowledge (a close then
        # dropped the goaway with the bytes still unsent: the client reconnected on its own
        # back-off instead of the goaway's spread).
        gateway = Gateway(tempfile.mkdtemp(prefix="herald-gateway-drain-behind-"),
                          HERALD_GATEWAY_ACK_TIMEOUT_MS="10000", HERALD_GATEWAY_DRAIN_MS="15000",
                          HERALD_GATEWAY_IDLE_TIMEOUT_SECONDS="60")
        try:
            token, device_id = self.register_device()
            connection = Framed(gateway, receive_buffer=4096)
            self.addCleanup(connection.close)
            connection.send(hello(self.client_key, token))
            self.assertEqual(connection.receive().WhichOneof("kind"), "welcome")
            # A recall storm (revokes are written, never acknowledged) to a client that reads
            # nothing for now: ~9 MB, more than the kernel's send buffer (4 MB at most here) and
            # the gateway's 64 KiB take; the rest are refused as unwritable. Two requests, each
            # under the delivery port's 8 MB.
            count = 80_000
            revokes = []
            for number in range(count):
                revoke = pb.Revoke()
                revoke.push_id = uuid.uuid4().bytes
                revoke.collapse_id = f"storm-{number:05}-".ljust(64, "x")  # APNs' longest collapse id
                revokes.append((device_id, revoke))
            # Each request is answered once its revokes are written or refused: when the client reads.
            pool = concurrent.futures.ThreadPoolExecutor(2)
            self.addCleanup(pool.shutdown)
            answers = [pool.submit(deliver, gateway, revokes[:count // 2]),
                       pool.submit(deliver, gateway, revokes[count // 2:])]
            written = [-1]

            def settled():
                # The storm is one batch on the connection's event loop: done once the count stops.
                now = metric(gateway, "herald_gateway_revokes_sent_total")
                done, written[0] = now > 0 and now == written[0], now
                return done
            eventually(lambda: settled() or time.sleep(0.2))
            self.assertLess(written[0], count, "the gateway never stopped writing to a client that reads nothing")
            gateway.process.send_signal(signal.SIGTERM)
            # Longer than many sweeps (50 ms here) and than TLS's 1 s wait for a close_notify: the
            # drain closed the connection at the first sweep before, and its unsent bytes went at
            # the end of that wait.
            time.sleep(3)
            # Catching up: a larger receive buffer from here (how far the window opens is bounded by
            # what the handshake agreed, 64 KiB or more: still faster than 4 KiB).
            connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            kinds = []
            while (frame := connection.receive(timeout=15)) is not None:
                kinds.append(frame.WhichOneof("kind"))
            self.assertEqual(kinds[-1:], ["goaway"], f"{len(kinds)} frames read, then the connection closed")
            self.assertEqual(kinds.count("revoke"), written[0])
            results = [answer.result(timeout=30) for answer in answers]
            self.assertEqual([status for status, _ in results], [200, 200])
            self.assertEqual(sum(len(answer.acknowledged_device_ids) for _, answer in results), written[0])
            self.assertEqual(gateway.process.wait(timeout=30), 0)
        finally:
            gateway.stop()

if __name__ == "__main__":
    unittest.main()
