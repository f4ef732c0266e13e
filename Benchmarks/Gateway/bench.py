#!/usr/bin/env python3
"""The gateway benchmark's measurements (run by Benchmarks/Gateway/run.sh on a `herald dev` stack):

1. Capacity, against Debian's mosquitto in the same run with the same load tool (phones.py):
   N TLS connections to herald-gateway, then N MQTT-over-TLS clients of mosquitto (the same
   certificate and key), each server's resident memory per connection and CPU per delivered
   message for a broadcast of one message to every connection (pushes handed to the gateway's
   delivery port in batches of 500, as herald-sender does; QoS 1 publishes to one topic per client
   on mosquitto, as a per-device channel is used), each message acknowledged by its client (Ack,
   PUBACK), three rounds each; and the CPU each spends a second holding the connections with
   nothing to send (the clients' heartbeats, the server's own timers), over 10 s.
2. Latency through the whole stack: single-device pushes from the Open API's 202 to the phone's
   receipt, for connected phones (the online road) and for devices that are not connected (APNs:
   apns-sim's receipt), interleaved in one run. The phones here are HeraldKit's (`herald dev
   phones`): the N connected in the foreground, the others in the background reading what
   apns-sim delivered to them. The online road's receipt is the SDK's own clock; the APNs road's
   is apns-sim's acceptance time as the phone read it (the phone polls, so its own clock would
   add up to 250 ms that a real phone does not wait).

Prints a table of figures and, last, one JSON line.
"""

import argparse
import concurrent.futures
import json
import os
import signal
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

sys.dont_write_bytecode = True  # no __pycache__ left beside the scripts
from phones import mqtt_length  # noqa: E402  (the same MQTT framing as the phones)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def compile_deliveries():
    from grpc_tools import protoc
    import importlib

    out = tempfile.mkdtemp(prefix="herald-bench-pb2-")
    schemas = os.path.join(ROOT, "Schemas", "gateway")
    for name in ("gateway", "deliveries"):
        if protoc.main(["protoc", f"-I{schemas}", f"--python_out={out}", os.path.join(schemas, f"{name}.proto")]) != 0:
            raise SystemExit(f"protoc failed on {name}.proto")
    sys.path.insert(0, out)
    return importlib.import_module("deliveries_pb2")


def process(pid):
    """(resident bytes, CPU seconds) of a process now. The CPU time is the scheduler's, in
    nanoseconds, summed over the process's threads (`/proc/PID/task/*/schedstat`): `/proc/PID/stat`
    counts in ticks of 10 ms, which at 3,000 messages a round is 3.3 µs per message a tick — as
    much as the difference being measured. A thread that ended during a round takes its time with
    it (the servers' threads live as long as they do)."""
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
    nanoseconds = 0
    for thread in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{thread}/schedstat") as schedstat:
                nanoseconds += int(schedstat.read().split()[0])
        except FileNotFoundError:
            pass  # the thread ended between the listing and the read
    return rss, nanoseconds / 1e9


def percentile(values, share):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class Phones:
    """A load tool in the background (phones.py, or HeraldKit's `herald dev phones` when given its
    arguments): start, wait until live, stop and read the report (the two write the same files)."""

    def __init__(self, python, devices, key, address, ca, state, mqtt=False, herald_kit=None):
        self.state = state
        os.makedirs(state, exist_ok=True)
        for name in os.listdir(state):
            os.remove(os.path.join(state, name))
        arguments = [python, os.path.join(HERE, "phones.py"), "--devices", devices, "--key", key, "--address", address,
                     "--ca", ca, "--state", state]
        if herald_kit:
            arguments = herald_kit + ["--devices", devices, "--key", key, "--address", address, "--ca", ca,
                                      "--state", state]
        if mqtt:
            arguments.append("--mqtt")
        self.log = open(os.path.join(state, "phones.log"), "w")
        self.process = subprocess.Popen(arguments, stdout=self.log, stderr=subprocess.STDOUT)

    def status(self):
        try:
            with open(os.path.join(self.state, "status.json")) as source:
                return json.load(source)
        except (OSError, ValueError):
            return {}

    def wait(self, count, what, limit=600):
        start = time.monotonic()
        while self.status().get(what, 0) < count:
            if time.monotonic() - start > limit:
                raise SystemExit(f"phones: {self.status()} after {limit} s, wanted {what} {count}")
            if self.process.poll() is not None:
                raise SystemExit(f"phones exited ({self.process.returncode}); see {self.state}/phones.log")
            time.sleep(0.2)
        return time.monotonic() - start

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=300)
        with open(os.path.join(self.state, "report.json")) as source:
            return json.load(source)


def gateway_rounds(arguments, pid, devices, pb, payload):
    """Each round hands one push per device to the delivery port; returns CPU and latencies."""
    results = []
    for round_number in range(arguments.rounds):
        push_id = uuid.uuid4()
        batches = []
        for start in range(0, len(devices), 500):
            message = pb.Deliveries()
            for device_id in devices[start:start + 500]:
                delivery = message.deliveries.add()
                delivery.device_id = device_id
                delivery.push.push_id = push_id.bytes
                delivery.push.payload = payload
                delivery.push.push_type = "alert"
                delivery.push.priority = 10
            batches.append(message.SerializeToString())
        sent = {}

        def post(index):
            request = urllib.request.Request(
                f"http://{arguments.delivery}/v1/deliveries", method="POST", data=batches[index],
                headers={"Authorization": f"Bearer {arguments.delivery_token}",
                         "Content-Type": "application/x-protobuf"})
            sent[index] = time.time() * 1000
            with urllib.request.urlopen(request, timeout=120) as answer:
                results_message = pb.DeliveryResults()
                results_message.ParseFromString(answer.read())
                return len(results_message.acknowledged_device_ids)

        _, cpu_before = process(pid)
        started = time.monotonic()
        # 16 batches in flight: what two senders hand the gateways at once (8 each,
        # HERALD_SENDER_MAX_ONLINE_BATCHES_IN_FLIGHT, of their 32 batches in flight).
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            acknowledged = sum(pool.map(post, range(len(batches))))
        elapsed = time.monotonic() - started
        time.sleep(0.5)  # the last acks' bookkeeping
        _, cpu_after = process(pid)
        results.append({"push": str(push_id), "acknowledged": acknowledged, "seconds": elapsed,
                        "cpu": cpu_after - cpu_before, "sent": min(sent.values())})
        time.sleep(1)
    return results


def mqtt_rounds(arguments, pid, tokens, payload, phones):
    """Each round publishes one QoS 1 message per client topic over one plain connection to the
    broker (a window of 1,000 unacknowledged) and waits until every client has it (the broker's
    PUBACK says only that the broker holds it): CPU is read once every client received it."""
    results = []
    connection = socket.create_connection(("127.0.0.1", arguments.mqtt_publisher_port))
    body = b"\x00\x04MQTT\x04\x02\x01\x2c\x00\x09publisher"
    connection.sendall(bytes([0x10, len(body)]) + body)
    pending = b""

    def read_acks(pending):
        data = connection.recv(65536)
        if not data:
            raise SystemExit("mosquitto closed the publisher's connection")
        pending += data
        acks = 0
        while len(pending) >= 4:
            if pending[0] not in (0x40, 0x20):  # PUBACK (or the CONNACK first)
                raise SystemExit(f"the publisher got packet type {pending[0] >> 4}, not a PUBACK")
            acks += pending[0] == 0x40
            pending = pending[4:]
        return pending, acks

    received = 0
    for round_number in range(arguments.rounds):
        marker = f"round-{round_number}-{uuid.uuid4().hex[:8]}|".encode()
        _, cpu_before = process(pid)
        started = time.monotonic()
        sent_at = time.time() * 1000
        outstanding, packet, acknowledged = 0, 0, 0
        for token in tokens:
            packet = packet % 65535 + 1
            topic = f"d/{token}".encode()
            message = struct.pack(">H", len(topic)) + topic + struct.pack(">H", packet) + marker + payload
            connection.sendall(bytes([0x32]) + mqtt_length(len(message)) + message)
            outstanding += 1
            while outstanding >= 1000:
                pending, acks = read_acks(pending)
                outstanding -= acks
                acknowledged += acks
        while outstanding:
            pending, acks = read_acks(pending)
            outstanding -= acks
            acknowledged += acks
        received += len(tokens)
        phones.wait(received, "pushes", limit=300)
        elapsed = time.monotonic() - started
        time.sleep(0.5)
        _, cpu_after = process(pid)
        results.append({"marker": marker.decode()[:-1], "acknowledged": acknowledged, "seconds": elapsed,
                        "cpu": cpu_after - cpu_before, "sent": sent_at})
        time.sleep(1)
    connection.close()
    return results


def delivery_latencies(report, rounds, key):
    """Per round, each receipt minus the broadcast's start (ms): how long after the first message
    was handed to the server each phone had its own."""
    per_round = []
    for entry in rounds:
        latencies = []
        for phone in report["phones"].values():
            for push_id, payload_id, received in phone["pushes"]:
                if (push_id if key == "push" else payload_id.split("|")[0]) == entry[key]:
                    latencies.append(received - entry["sent"])
        per_round.append(latencies)
    return per_round


def holding_cpu(pid, seconds=10):
    """CPU milliseconds a second a server spends holding its connections with nothing to send
    (the clients' heartbeats, the server's timeouts), over `seconds`."""
    _, before = process(pid)
    time.sleep(seconds)
    _, after = process(pid)
    return (after - before) * 1000 / seconds


def server_figures(idle_rss, rss, count, connect_seconds, holding, rounds, latencies):
    """One server's memory, connect time, CPU while only holding the connections, and each
    round's CPU per message and receipt times."""
    return {
        "idle_rss_bytes": idle_rss, "rss_bytes": rss, "rss_per_connection": (rss - idle_rss) / count,
        "connect_seconds": connect_seconds, "holding_cpu_ms_per_second": holding,
        "rounds": [{"acknowledged": r["acknowledged"], "seconds": round(r["seconds"], 3),
                    "cpu_us_per_message": r["cpu"] / max(1, r["acknowledged"]) * 1e6,
                    "p50_ms": percentile(l, 0.5), "p99_ms": percentile(l, 0.99)}
                   for r, l in zip(rounds, latencies)],
    }


def api_latencies(arguments, phones, online_ids, offline_ids):
    """Single-device pushes through herald-api, alternating a connected and a not connected
    device, one every 50 ms: the 202's time for each."""
    accepted = {}
    for index in range(arguments.latency_pushes):
        for road, ids in (("online", online_ids), ("apns", offline_ids)):
            device = ids[index % len(ids)]
            body = json.dumps({"audience": {"registration_ids": [device]},
                               "notification": {"alert": {"body": f"latency {road} {index}"}}}).encode()
            request = urllib.request.Request(f"{arguments.api}/v1/pushes", method="POST", data=body,
                                             headers={"Authorization": f"Bearer {arguments.server_key}",
                                                      "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as answer:
                push = json.load(answer)["id"]
            accepted[push] = (road, time.time() * 1000)
            time.sleep(0.05)
    return accepted


def set_faults(sim_admin, faults):
    urllib.request.urlopen(urllib.request.Request(f"{sim_admin}/faults", method="PUT", data=json.dumps(faults).encode(),
                                                  headers={"Content-Type": "application/json"}), timeout=10)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", required=True)
    parser.add_argument("--devices", required=True, help="the connected devices' file (with registration ids)")
    parser.add_argument("--offline", required=True, help="devices that stay unconnected (with registration ids)")
    parser.add_argument("--key", required=True)
    parser.add_argument("--server-key", required=True)
    parser.add_argument("--api", required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--delivery", required=True)
    parser.add_argument("--delivery-token", required=True)
    parser.add_argument("--gateway-pid", type=int, required=True)
    parser.add_argument("--mosquitto", required=True, help="mosquitto's configuration file")
    parser.add_argument("--mqtt-port", type=int, required=True)
    parser.add_argument("--mqtt-publisher-port", type=int, required=True)
    parser.add_argument("--sim-admin", required=True)
    parser.add_argument("--herald", required=True, help="the herald CLI, whose `dev phones` are HeraldKit's")
    parser.add_argument("--state", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-pushes", type=int, default=200)
    parser.add_argument("--apple-round-trips", type=lambda text: [int(v) for v in text.split(",")], default=[0, 20],
                        help="comma-separated fixed APNs round trips in ms, one latency phase each (0: none)")
    arguments = parser.parse_args()
    pb = compile_deliveries()
    devices = [json.loads(line) for line in open(arguments.devices) if line.strip()]
    offline = [json.loads(line) for line in open(arguments.offline) if line.strip()]
    count = len(devices)
    payload = json.dumps({"aps": {"alert": {"title": "Benchmark", "body": "One message to every connection"}},
                         "herald": {"push_id": "0" * 36}}).encode()
    figures = {"connections": count}

    # herald-gateway.
    idle_rss, _ = process(arguments.gateway_pid)
    phones = Phones(arguments.python, arguments.devices, arguments.key, arguments.address, arguments.ca,
                    os.path.join(arguments.state, "gateway"))
    connect_seconds = phones.wait(count, "live")
    _, cpu_connected = process(arguments.gateway_pid)
    time.sleep(3)
    rss, _ = process(arguments.gateway_pid)
    holding = holding_cpu(arguments.gateway_pid)
    gateway = gateway_rounds(arguments, arguments.gateway_pid, [device["id"] for device in devices], pb, payload)
    report = phones.stop()
    latencies = delivery_latencies(report, gateway, "push")
    figures["gateway"] = server_figures(idle_rss, rss, count, connect_seconds, holding, gateway, latencies)

    # The whole stack's latency, online against APNs, on HeraldKit's phones: the same devices
    # connected in the foreground, the others in the background on what apns-sim delivers. Once
    # per Apple round trip modelled by apns-sim's latency fault (0: apns-sim on loopback answers
    # at once); a phone's APNs copy is stamped when apns-sim's answer was due (`deliverableAt`).
    figures["latency"] = {}
    for round_trip in arguments.apple_round_trips:
        faults = {"latency": {"distribution": "fixed", "milliseconds": round_trip}} if round_trip else {}
        set_faults(arguments.sim_admin, faults)
        urllib.request.urlopen(urllib.request.Request(f"{arguments.sim_admin}/reset", method="POST"), timeout=10)
        herald_kit = [arguments.herald, "dev", "phones", "--background", arguments.offline,
                      "--apns-sim", arguments.sim_admin]
        phones = Phones(arguments.python, arguments.devices, arguments.key, arguments.address, arguments.ca,
                        os.path.join(arguments.state, f"heraldkit-{round_trip}"), herald_kit=herald_kit)
        figures["heraldkit_connect_seconds"] = phones.wait(count, "live")
        accepted = api_latencies(arguments, phones, [device["id"] for device in devices],
                                 [device["id"] for device in offline])
        phones.wait(arguments.latency_pushes, "apns", limit=60)
        report = phones.stop()
        road = {"online": [], "apns": []}
        for phone in report["phones"].values():
            for push_id, _, received in phone["pushes"]:
                if push_id in accepted and accepted[push_id][0] == "online":
                    road["online"].append(received - accepted[push_id][1])
            for _, push_id, received in phone["apns"]:
                if push_id in accepted and accepted[push_id][0] == "apns":
                    road["apns"].append(received - accepted[push_id][1])
        figures["latency"][str(round_trip)] = {
            name: {"count": len(values), "p50_ms": percentile(values, 0.5), "p99_ms": percentile(values, 0.99)}
            for name, values in road.items()}
    set_faults(arguments.sim_admin, {})

    # mosquitto, the anchor: the same connections, the same load tool.
    mosquitto = subprocess.Popen(["mosquitto", "-c", arguments.mosquitto], stdout=subprocess.DEVNULL,
                                 stderr=open(os.path.join(arguments.state, "mosquitto.log"), "w"))
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", arguments.mqtt_publisher_port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        idle_rss, _ = process(mosquitto.pid)
        phones = Phones(arguments.python, arguments.devices, "", f"127.0.0.1:{arguments.mqtt_port}", arguments.ca,
                        os.path.join(arguments.state, "mosquitto"), mqtt=True)
        connect_seconds = phones.wait(count, "live")
        time.sleep(3)
        rss, _ = process(mosquitto.pid)
        holding = holding_cpu(mosquitto.pid)
        rounds = mqtt_rounds(arguments, mosquitto.pid, [device["token"] for device in devices], payload, phones)
        report = phones.stop()
    finally:
        mosquitto.terminate()
        mosquitto.wait(timeout=30)
    latencies = delivery_latencies(report, rounds, "marker")
    figures["mosquitto"] = server_figures(idle_rss, rss, count, connect_seconds, holding, rounds, latencies)

    g, m = figures["gateway"], figures["mosquitto"]
    g_cpu = statistics.median(r["cpu_us_per_message"] for r in g["rounds"])
    m_cpu = statistics.median(r["cpu_us_per_message"] for r in m["rounds"])
    figures["ratios"] = {
        "memory_per_connection_gateway_to_mosquitto": g["rss_per_connection"] / m["rss_per_connection"],
        "cpu_per_message_gateway_to_mosquitto": g_cpu / m_cpu,
        "online_p99_to_apns_p99": {trip: roads["online"]["p99_ms"] / roads["apns"]["p99_ms"]
                                   for trip, roads in figures["latency"].items()},
    }
    print(f"{count} connections, {arguments.rounds} broadcast rounds each")
    print(f"{'':28}{'herald-gateway':>18}{'mosquitto':>14}")
    print(f"{'RSS idle (MiB)':28}{g['idle_rss_bytes'] / 2**20:>18.1f}{m['idle_rss_bytes'] / 2**20:>14.1f}")
    print(f"{'RSS connected (MiB)':28}{g['rss_bytes'] / 2**20:>18.1f}{m['rss_bytes'] / 2**20:>14.1f}")
    print(f"{'RSS per connection (KiB)':28}{g['rss_per_connection'] / 1024:>18.2f}{m['rss_per_connection'] / 1024:>14.2f}")
    print(f"{'connect all (s)':28}{g['connect_seconds']:>18.1f}{m['connect_seconds']:>14.1f}")
    print(f"{'CPU holding them (ms/s)':28}{g['holding_cpu_ms_per_second']:>18.1f}{m['holding_cpu_ms_per_second']:>14.1f}")
    for index in range(arguments.rounds):
        gr, mr = g["rounds"][index], m["rounds"][index]
        print(f"{f'round {index + 1}: CPU/message (µs)':28}{gr['cpu_us_per_message']:>18.1f}{mr['cpu_us_per_message']:>14.1f}")
        print(f"{f'round {index + 1}: broadcast (s)':28}{gr['seconds']:>18.2f}{mr['seconds']:>14.2f}")
        print(f"{f'round {index + 1}: receipt p50/p99 (ms)':28}{gr['p50_ms']:>10.0f}/{gr['p99_ms']:<7.0f}{mr['p50_ms']:>7.0f}/{mr['p99_ms']:<6.0f}")
    print(f"HeraldKit's phones (herald dev phones): {count} connected in {figures['heraldkit_connect_seconds']:.1f} s")
    for trip, roads in figures["latency"].items():
        apple = f"Apple's round trip {trip} ms (apns-sim's latency fault)" if trip != "0" else "apns-sim on loopback"
        for name, values in roads.items():
            print(f"single-device push, API 202 → receipt on a HeraldKit phone, {apple}, {name}: p50 {values['p50_ms']:.1f} ms, p99 {values['p99_ms']:.1f} ms ({values['count']})")
    ratios = figures["ratios"]
    print(f"memory per connection, gateway ÷ mosquitto: {ratios['memory_per_connection_gateway_to_mosquitto']:.2f} (goal ≤ 1)")
    print(f"CPU per delivered message, gateway ÷ mosquitto (median of rounds): {ratios['cpu_per_message_gateway_to_mosquitto']:.2f} (goal ≤ 1)")
    for trip, ratio in ratios["online_p99_to_apns_p99"].items():
        apple = f"Apple's round trip {trip} ms" if trip != "0" else "apns-sim on loopback (no round trip of Apple's)"
        print(f"p99 online ÷ p99 APNs, {apple}: {ratio:.2f} (goal < 1)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
