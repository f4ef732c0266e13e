#!/usr/bin/env python3
"""Simulated phones in the foreground: many long connections, each a device that says hello,
acknowledges what it is sent, pings, and reconnects the way docs/gateway.md tells a client to
(a goaway's random wait; after a lost connection, a growing random back-off). A client Herald
did not write — Python's ssl and asyncio, the frames compiled from Schemas/gateway/gateway.proto —
used by the end-to-end tests (scripts/test-end-to-end.sh) and the gateway benchmark
(Benchmarks/Gateway/run.sh), which also drives it as MQTT clients of mosquitto, the anchor.

    phones.py --devices FILE --key CLIENT_KEY --address 127.0.0.1:7443 --ca gateway.crt \\
              --state DIR [--workers N] [--silent-every K] [--mqtt]
              [--api http://127.0.0.1:8080 --open-share 0.3 --action-share 0.25]

FILE holds one device per line: {"token": "…", "environment": "sandbox"} (herald dev devices'
file). The phones run until SIGTERM; every second DIR/status.json says how many are live and what
they received; at the end DIR/report.json lists, per token, the push ids received (over
`Push` frames, and the `herald.push_id` of each payload), the revokes, and each push's receipt time.

With --api, each acknowledging phone reports what its user did with every push it acknowledged
(docs/engagement.md) as an app's SDK would, with the client key: `received`, then `opened` for a
share of the pushes and an `action` ("reply") for a share of those opened, chosen by a hash of
(token, push id) so a run is repeatable. It sends each batch twice (the second time as a retry that
did not hear the first answer) and records, per token, the events stored and what the repeat
counted (it should count nothing). Answers of 429 are retried after their Retry-After.

Each worker process holds at most 9,000 connections (a process here may hold 20,000 descriptors),
spread over the source addresses 127.1.x.y so no address runs out of ports.
"""

import argparse
import asyncio
import hashlib
import json
import multiprocessing
import os
import random
import signal
import ssl
import struct
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PER_WORKER = 9000


def compile_frames():
    from grpc_tools import protoc
    import importlib

    out = tempfile.mkdtemp(prefix="herald-phones-pb2-")
    schemas = os.path.join(ROOT, "Schemas", "gateway")
    if protoc.main(["protoc", f"-I{schemas}", f"--python_out={out}", os.path.join(schemas, "gateway.proto")]) != 0:
        raise SystemExit("protoc failed on Schemas/gateway/gateway.proto")
    sys.path.insert(0, out)
    return importlib.import_module("gateway_pb2")


class Phone:
    """One device's connection and what it received."""

    def __init__(self, worker, index, device):
        self.worker = worker
        self.index = index
        self.token = device["token"]
        self.environment = device.get("environment", "sandbox")
        self.source = f"127.1.{(index // 200) % 250 + 1}.{index % 200 + 10}"
        self.acknowledges = not (worker.silent_every and index % worker.silent_every == 0)
        self.live = False
        self.pushes = []  # (push id, payload's herald.push_id, received at ms)
        self.revokes = []
        self.welcomes = 0
        self.events = []  # [push id, type, action] stored through POST /v1/events
        self.recounted = 0  # what the repeated batches counted again (0 when deduplicated)
        self.event_failures = []

    async def run(self):
        failures = 0
        while not self.worker.stopping:
            wait = None
            try:
                async with self.worker.handshakes:
                    reader, writer = await asyncio.wait_for(
                        asyncio.open_connection(
                            self.worker.host, self.worker.port, ssl=self.worker.tls, server_hostname="localhost",
                            local_addr=(self.source, 0)), 30)
                welcomed = self.welcomes
                try:
                    if self.worker.mqtt:
                        wait = await self.mqtt_session(reader, writer)
                    else:
                        wait = await self.gateway_session(reader, writer)
                finally:
                    if self.welcomes > welcomed:
                        failures = 0
                    self.live = False
                    writer.close()
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ssl.SSLError, ConnectionError) as error:
                self.worker.count(f"connect_failed:{type(error).__name__}")
            if self.worker.stopping:
                return
            failures += 1
            # A goaway names its window; otherwise back off, growing, with jitter (docs/gateway.md).
            if wait is None:
                wait = random.uniform(0.5, min(30.0, 1.0 * 2 ** min(failures, 5)))
            self.worker.count("reconnects")
            await asyncio.sleep(wait)

    async def gateway_session(self, reader, writer):
        pb = self.worker.pb
        hello = pb.Frame()
        hello.hello.versions.append(1)
        hello.hello.client_key = self.worker.key
        hello.hello.device_token = self.token
        hello.hello.environment = self.environment
        send(writer, hello)
        await writer.drain()
        heartbeat = None
        try:
            while True:
                header = await reader.readexactly(4)
                frame = pb.Frame.FromString(await reader.readexactly(struct.unpack(">I", header)[0]))
                kind = frame.WhichOneof("kind")
                if kind == "welcome":
                    self.live = True
                    self.welcomes += 1
                    self.worker.count("welcomes")
                    heartbeat = asyncio.ensure_future(self.ping(writer, frame.welcome.heartbeat_seconds))
                elif kind == "push":
                    received = time.time() * 1000
                    payload_id = ""
                    try:
                        payload_id = json.loads(frame.push.payload).get("herald", {}).get("push_id", "")
                    except ValueError:
                        pass
                    self.pushes.append((str(uuid.UUID(bytes=frame.push.push_id)), payload_id, received))
                    if self.acknowledges:
                        ack = pb.Frame()
                        ack.ack.delivery = frame.push.delivery
                        send(writer, ack)
                        if self.worker.api:
                            self.worker.report(self, str(uuid.UUID(bytes=frame.push.push_id)))
                elif kind == "revoke":
                    self.revokes.append(str(uuid.UUID(bytes=frame.revoke.push_id)))
                elif kind == "ping":
                    pong = pb.Frame()
                    pong.pong.nonce = frame.ping.nonce
                    send(writer, pong)
                elif kind == "goaway":
                    self.worker.count("goaways")
                    return random.uniform(
                        frame.goaway.reconnect_after_min_milliseconds, frame.goaway.reconnect_after_max_milliseconds
                    ) / 1000
                elif kind == "error":
                    self.worker.count(f"error:{frame.error.code}")
                    if frame.error.fatal:
                        if frame.error.retry_after_milliseconds:
                            return frame.error.retry_after_milliseconds / 1000 * random.uniform(1, 1.5)
                        return None
        finally:
            if heartbeat:
                heartbeat.cancel()

    def events_for(self, push):
        """What the user does with `push`: received always; opened and replied by a hash's shares."""
        digest = hashlib.sha256(f"{self.token}:{push}".encode()).digest()
        chosen = [("received", None)]
        if digest[0] / 256 < self.worker.open_share:
            chosen.append(("opened", None))
            if digest[1] / 256 < self.worker.action_share:
                chosen.append(("action", "reply"))
        return chosen

    async def report_events(self, push):
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        chosen = self.events_for(push)
        events = [{"push_id": push, "token": self.token, "type": kind, "occurred_at": now,
                   **({"action": action} if action else {})} for kind, action in chosen]
        body = json.dumps({"events": events}).encode()
        first = await self.worker.post_events(body)
        if first is None or first[0] != 200:
            self.event_failures.append([push, first[0] if first else 0, first[1] if first else ""])
            return
        self.events.extend([push, kind, action or ""] for kind, action in chosen)
        again = await self.worker.post_events(body)
        if again is None or again[0] != 200:
            self.event_failures.append([push, again[0] if again else 0, again[1] if again else ""])
            return
        self.recounted += json.loads(again[1]).get("counted", 0)

    async def ping(self, writer, seconds):
        nonce = 0
        while True:
            await asyncio.sleep(max(1, seconds))
            nonce += 1
            frame = self.worker.pb.Frame()
            frame.ping.nonce = nonce
            send(writer, frame)

    async def mqtt_session(self, reader, writer):
        """MQTT 3.1.1: CONNECT, SUBSCRIBE to d/<token> at QoS 1, then PUBACK each PUBLISH."""
        client = self.token[:23].encode()
        body = mqtt_string(b"MQTT") + bytes([4, 0x02]) + struct.pack(">H", 300) + mqtt_string(client)
        writer.write(bytes([0x10]) + mqtt_length(len(body)) + body)
        topic = f"d/{self.token}".encode()
        body = struct.pack(">H", 1) + mqtt_string(topic) + bytes([1])
        writer.write(bytes([0x82]) + mqtt_length(len(body)) + body)
        await writer.drain()
        keepalive = asyncio.ensure_future(self.mqtt_ping(writer))
        try:
            await self.mqtt_read(reader, writer)
        finally:
            keepalive.cancel()

    async def mqtt_ping(self, writer):
        while True:
            await asyncio.sleep(60)
            writer.write(bytes([0xC0, 0]))  # PINGREQ, well within the 300 s keepalive

    async def mqtt_read(self, reader, writer):
        while True:
            first = (await reader.readexactly(1))[0]
            length = await read_mqtt_length(reader)
            body = await reader.readexactly(length) if length else b""
            kind = first >> 4
            if kind == 9:  # SUBACK: subscribed, live
                self.live = True
                self.welcomes += 1
                self.worker.count("welcomes")
            elif kind == 3:  # PUBLISH
                received = time.time() * 1000
                (topic_length,) = struct.unpack(">H", body[:2])
                position = 2 + topic_length
                qos = (first >> 1) & 3
                if qos:
                    packet = body[position:position + 2]
                    position += 2
                    writer.write(bytes([0x40, 2]) + packet)
                self.pushes.append(("", body[position:].decode(errors="replace")[:64], received))


def send(writer, frame):
    body = frame.SerializeToString()
    writer.write(struct.pack(">I", len(body)) + body)


def mqtt_string(data):
    return struct.pack(">H", len(data)) + data


def mqtt_length(length):
    out = bytearray()
    while True:
        byte = length % 128
        length //= 128
        out.append(byte | (0x80 if length else 0))
        if not length:
            return bytes(out)


async def read_mqtt_length(reader):
    multiplier, value = 1, 0
    while True:
        byte = (await reader.readexactly(1))[0]
        value += (byte & 127) * multiplier
        if not byte & 128:
            return value
        multiplier *= 128


class Worker:
    def __init__(self, arguments, devices, first, number):
        self.host, port = arguments.address.rsplit(":", 1)
        self.port = int(port)
        self.key = arguments.key
        self.mqtt = arguments.mqtt
        self.silent_every = arguments.silent_every
        self.api = arguments.api
        self.open_share = arguments.open_share
        self.action_share = arguments.action_share
        self.reports = set()
        self.state = arguments.state
        self.number = number
        self.pb = None if self.mqtt else compile_frames()
        self.tls = ssl.create_default_context(cafile=arguments.ca)
        self.tls.check_hostname = True
        self.stopping = False
        self.counters = {}
        self.phones = [Phone(self, first + index, device) for index, device in enumerate(devices)]

    def count(self, name):
        self.counters[name] = self.counters.get(name, 0) + 1

    def report(self, phone, push):
        task = asyncio.ensure_future(phone.report_events(push))
        self.reports.add(task)
        task.add_done_callback(self.reports.discard)

    async def post_events(self, body):
        """POST /v1/events with the client key over HTTP/1.1: (status, body), 429 retried."""
        host, port = self.api.split("://", 1)[1].rstrip("/").rsplit(":", 1)
        request = (f"POST /v1/events HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {self.key}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                   ).encode() + body
        for _ in range(50):
            try:
                async with self.requests:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 30)
                    try:
                        writer.write(request)
                        answer = await asyncio.wait_for(reader.read(), 60)
                    finally:
                        writer.close()
            except (OSError, asyncio.TimeoutError):
                self.count("events_connect_failed")
                await asyncio.sleep(random.uniform(0.5, 2))
                continue
            head, _, text = answer.partition(b"\r\n\r\n")
            lines = head.decode(errors="replace").split("\r\n")
            status = int(lines[0].split()[1])
            if status == 429:
                self.count("events_throttled")
                retry = next((line.split(":", 1)[1] for line in lines if line.lower().startswith("retry-after:")), "1")
                await asyncio.sleep(float(retry) * random.uniform(1, 1.5))
                continue
            self.count(f"events_{status}")
            return status, text.decode(errors="replace")
        return None

    def status(self):
        return {
            "live": sum(phone.live for phone in self.phones),
            "phones": len(self.phones),
            "pushes": sum(len(phone.pushes) for phone in self.phones),
            "revokes": sum(len(phone.revokes) for phone in self.phones),
            "reports_pending": len(self.reports),
            "counters": self.counters,
        }

    async def main(self):
        self.handshakes = asyncio.Semaphore(200)
        self.requests = asyncio.Semaphore(16)
        loop = asyncio.get_running_loop()
        done = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, done.set)
        loop.add_signal_handler(signal.SIGINT, done.set)
        tasks = [asyncio.ensure_future(phone.run()) for phone in self.phones]
        while not done.is_set():
            write_json(os.path.join(self.state, f"status.{self.number}.json"), self.status())
            try:
                await asyncio.wait_for(done.wait(), 1)
            except asyncio.TimeoutError:
                pass
        self.stopping = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        report = {
            phone.token: {"pushes": phone.pushes, "revokes": phone.revokes, "welcomes": phone.welcomes,
                          "events": phone.events, "recounted": phone.recounted,
                          "event_failures": phone.event_failures}
            for phone in self.phones
        }
        write_json(os.path.join(self.state, f"report.{self.number}.json"), {"phones": report, "counters": self.counters})
        write_json(os.path.join(self.state, f"status.{self.number}.json"), self.status())


def write_json(path, value):
    with open(path + ".tmp", "w") as out:
        json.dump(value, out)
    os.replace(path + ".tmp", path)


def run_worker(arguments, devices, first, number):
    asyncio.run(Worker(arguments, devices, first, number).main())


def merged(state, workers, kind):
    result = {}
    for number in range(workers):
        path = os.path.join(state, f"{kind}.{number}.json")
        if not os.path.exists(path):
            continue
        with open(path) as source:
            part = json.load(source)
        for name, value in part.items():
            if isinstance(value, dict):
                into = result.setdefault(name, {})
                for key, item in value.items():
                    into[key] = into.get(key, 0) + item if isinstance(item, int) else item
            else:
                result[name] = result.get(name, 0) + value
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", required=True)
    parser.add_argument("--key", default="")
    parser.add_argument("--address", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--state", required=True)
    parser.add_argument("--limit", type=int, default=0, help="use the first N devices of the file")
    parser.add_argument("--silent-every", type=int, default=0, help="every Kth phone does not acknowledge")
    parser.add_argument("--mqtt", action="store_true", help="MQTT 3.1.1 clients of a broker instead")
    parser.add_argument("--api", default="", help="herald-api's URL (http): report engagement events there")
    parser.add_argument("--open-share", type=float, default=0.3, help="share of pushes a phone's user opens")
    parser.add_argument("--action-share", type=float, default=0.25, help="share of opened pushes answered by an action")
    arguments = parser.parse_args()
    os.makedirs(arguments.state, exist_ok=True)
    devices = []
    with open(arguments.devices) as source:
        for line in source:
            if line.strip():
                devices.append(json.loads(line))
            if arguments.limit and len(devices) == arguments.limit:
                break
    slices = [devices[start:start + PER_WORKER] for start in range(0, len(devices), PER_WORKER)]
    workers = [
        multiprocessing.Process(target=run_worker, args=(arguments, part, number * PER_WORKER, number))
        for number, part in enumerate(slices)
    ]
    for worker in workers:
        worker.start()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    while not stopping and any(worker.is_alive() for worker in workers):
        write_json(os.path.join(arguments.state, "status.json"), merged(arguments.state, len(workers), "status"))
        time.sleep(1)
    for worker in workers:
        if worker.is_alive():
            os.kill(worker.pid, signal.SIGTERM)
    for worker in workers:
        worker.join()
    write_json(os.path.join(arguments.state, "status.json"), merged(arguments.state, len(workers), "status"))
    report = {"phones": {}, "counters": {}}
    for number in range(len(workers)):
        path = os.path.join(arguments.state, f"report.{number}.json")
        if os.path.exists(path):
            with open(path) as source:
                part = json.load(source)
            report["phones"].update(part["phones"])
            for name, value in part["counters"].items():
                report["counters"][name] = report["counters"].get(name, 0) + value
    write_json(os.path.join(arguments.state, "report.json"), report)


if __name__ == "__main__":
    main()
