#!/usr/bin/env python3
"""The one-device benchmark's measurements (Benchmarks/OneDevice/run.sh): single-device pushes
timed from the Open API's 202 to apns-sim's receipt, split at the produce times of the records
they travel as, beside one hop through the same broker by kcat (the reference)."""
import argparse, json, os, statistics, subprocess, threading, time, urllib.request, uuid


def stats(values):
    values = sorted(values)
    if not values:
        return {"count": 0}
    at = lambda share: values[min(len(values) - 1, int(share * len(values)))]
    return {"count": len(values), "p10_ms": at(0.1), "p50_ms": statistics.median(values), "p90_ms": at(0.9),
            "p99_ms": at(0.99), "max_ms": values[-1]}


def records(brokers, topic):
    """The first produce time (ms) of each push id's record in `topic` (the key's first 16 bytes)."""
    data = subprocess.run(["kcat", "-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
                           "-f", "%T|%K|%k\n"], capture_output=True, check=True, timeout=120).stdout
    found, index = {}, 0
    while index < len(data):
        bar = data.index(b"|", index)
        created = int(data[index:bar])
        second = data.index(b"|", bar + 1)
        length = int(data[bar + 1:second])
        key = data[second + 1:second + 1 + length]
        index = second + 1 + length + 1
        if length >= 16:
            found.setdefault(str(uuid.UUID(bytes=bytes(key[:16]))), created)
    return found


def reference(brokers, linger, fetch_wait, count=100):
    """One hop through the broker by kcat: a record's produce time to its consumer's receipt. Each
    record is produced by a kcat of its own (`kcat -P` produces only once its input ends), so the
    figure also holds that producer's start and connection: an upper bound of one hop."""
    topic = f"herald.bench.one-device.{uuid.uuid4().hex[:8]}"
    consumer = subprocess.Popen(["kcat", "-b", brokers, "-C", "-t", topic, "-o", "end", "-u", "-q",
                                 "-X", f"fetch.wait.max.ms={fetch_wait}", "-X", "topic.auto.offset.reset=end",
                                 "-f", "%T\n"], stdout=subprocess.PIPE, text=True)
    hops = []

    def read():
        for line in consumer.stdout:
            hops.append(time.time() * 1000 - int(line))
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(2)  # the consumer's assignment
    # One kcat per record: `kcat -P` reads its input in blocks, so records written to one
    # producer's stdin one at a time would still be produced together.
    for index in range(count + 10):
        subprocess.run(["kcat", "-b", brokers, "-P", "-t", topic, "-X", f"linger.ms={linger}"],
                       input=f"{index}\n", text=True, check=True, timeout=30)
        time.sleep(0.05)
    time.sleep(1)
    consumer.terminate()
    consumer.wait(timeout=10)
    return hops[10:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stack", required=True)
    parser.add_argument("--config", required=True, help="the CLI's configuration (the app's server key)")
    parser.add_argument("--api", required=True)
    parser.add_argument("--sim-admin", required=True)
    parser.add_argument("--pushes", type=int, default=300)
    parser.add_argument("--warm-up", type=int, default=40)
    parser.add_argument("--state", required=True)
    arguments = parser.parse_args()
    stack = json.load(open(arguments.stack))
    key = json.load(open(arguments.config))["api_key"]
    brokers = next(p["environment"]["HERALD_KAFKA_BROKERS"] for p in stack["processes"]
                   if "HERALD_KAFKA_BROKERS" in p.get("environment", {}))
    linger = int(os.environ.get("HERALD_KAFKA_LINGER_MS", "0"))
    fetch_wait = int(os.environ.get("HERALD_KAFKA_FETCH_WAIT_MAX_MS", "10"))
    postgres = stack["postgres"]
    ids = [int(value) for value in subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(postgres["port"]), "-U", postgres["user"], "-d", postgres["database"],
         "-At", "-c", "SELECT id FROM devices ORDER BY id LIMIT 100"],
        env={**os.environ, "PGPASSWORD": postgres["password"]}, capture_output=True, text=True, check=True).stdout.split()]
    urllib.request.urlopen(urllib.request.Request(f"{arguments.sim_admin}/reset", method="POST"), timeout=10)

    accepted = {}
    for index in range(arguments.warm_up + arguments.pushes):
        body = json.dumps({"audience": {"registration_ids": [ids[index % len(ids)]]},
                           "notification": {"alert": {"body": f"one device {index}"}}}).encode()
        request = urllib.request.Request(f"{arguments.api}/v1/pushes", method="POST", data=body,
                                         headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            push = json.load(answer)["id"]
        if index >= arguments.warm_up:
            accepted[push] = time.time() * 1000
        time.sleep(0.05)
    time.sleep(3)

    received = {}
    for line in urllib.request.urlopen(f"{arguments.sim_admin}/notifications", timeout=30).read().decode().splitlines():
        entry = json.loads(line)
        push = json.loads(entry["payload"]).get("herald", {}).get("push_id")
        if push in accepted:
            received[push] = entry["receivedAt"]
    pushes = records(brokers, "herald.pushes")
    jobs = records(brokers, "herald.jobs.transactional")
    outcomes = records(brokers, "herald.outcomes")
    stages = {"202 → apns-sim (whole)": [], "202 → herald.pushes record": [],
              "herald.pushes → herald.jobs.transactional record": [], "jobs record → apns-sim": [],
              "apns-sim → herald.outcomes record": []}
    for push, at in accepted.items():
        if push not in received:
            continue
        stages["202 → apns-sim (whole)"].append(received[push] - at)
        if push in pushes and push in jobs and push in outcomes:
            stages["202 → herald.pushes record"].append(pushes[push] - at)
            stages["herald.pushes → herald.jobs.transactional record"].append(jobs[push] - pushes[push])
            stages["jobs record → apns-sim"].append(received[push] - jobs[push])
            stages["apns-sim → herald.outcomes record"].append(outcomes[push] - received[push])
    hop = reference(brokers, linger, fetch_wait)
    figures = {"pushes": len(accepted), "received": len(received), "linger_ms": linger, "fetch_wait_ms": fetch_wait,
               "stages": {name: stats(values) for name, values in stages.items()},
               "reference_kcat_hop": stats(hop)}
    print(f"{len(received)} of {len(accepted)} pushes reached apns-sim (linger {linger} ms, fetch wait {fetch_wait} ms)")
    print(f"{'stage (ms)':52}{'p10':>8}{'p50':>8}{'p90':>8}{'p99':>8}{'max':>8}")
    for name, figure in list(figures["stages"].items()) + [("reference: one hop by kcat (a new producer each)", figures["reference_kcat_hop"])]:
        if figure["count"]:
            print(f"{name:52}" + "".join(f"{figure[k]:>8.1f}" for k in ("p10_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms")))
    print("(a stage ends at a record's produce time, not its arrival: the broker's part of a hop is in the next stage)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
