#!/usr/bin/env python3
"""Checks Herald's Kubernetes manifests and compose file (run by scripts/test-deploy.sh).

For the base and each overlay under Deploy/kubernetes/overlays, rendered by scripts/kustomize_render.py
(the subset of kustomize these manifests use, in Python: Debian ships no kubectl able to render them;
scripts/test_kustomize_render.py holds it to kustomize's output):
  - every core object is valid for the Kubernetes version given (kubernetes-validate, strict:
    an unknown field fails);
  - KEDA objects are valid against Deploy/kubernetes/schemas/keda.schema.json (Herald's subset);
  - Herald's own rules: every HERALD_* variable is a documented setting; no secret is set in
    the clear (secrets come as *_FILE), and every *_FILE path is a file the pod mounts; every
    service has liveness and readiness probes on its operations port's /healthz and /readyz;
    the sender's grace period covers its longest drain, recomputed from its settings; KEDA reads
    the group and topic the senders use, on the brokers they use, and never scales past
    herald.jobs' partitions; budgets, autoscalers and scalers point at Deployments that exist.
Then Deploy/compose/compose.yaml: each Herald service sets the same variables, with the same
values, as its Deployment in the base, apart from the differences listed in COMPOSE_MAY_DIFFER.
"""
import json
import pathlib
import re
import sys

import jsonschema
import kubernetes_validate
import yaml

sys.dont_write_bytecode = True  # no scripts/__pycache__ left in the working tree
import kustomize_render  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
KUBERNETES_VERSION = "1.30.0"
SECRETS = {"HERALD_MASTER_KEY", "HERALD_MASTER_KEY_DECRYPT_ONLY", "HERALD_ADMIN_TOKEN",
           "HERALD_POSTGRES_PASSWORD", "HERALD_KAFKA_SASL_PASSWORD"}
# The producer's flush on shutdown (docs/configuration.md: "A graceful shutdown waits up to 30 s").
PRODUCER_FLUSH_SECONDS = 30
SENDER_DEFAULTS = {"HERALD_SENDER_MAX_ATTEMPTS": 8, "HERALD_SENDER_RETRY_BASE_MS": 200,
                   "HERALD_SENDER_RETRY_MAX_MS": 30000, "HERALD_SENDER_REQUEST_TIMEOUT_MS": 10000,
                   "HERALD_SENDER_ONLINE_TIMEOUT_MS": 5000, "HERALD_SENDER_MAX_BATCHES_IN_FLIGHT": 32,
                   "HERALD_SENDER_MAX_ONLINE_BATCHES_IN_FLIGHT": 8}
# What each Job carries so that Argo CD and Flux run it before the services (Deploy/README.md).
JOB_ORDERING = {
    "argocd.argoproj.io/sync-wave": "1",
    "argocd.argoproj.io/sync-options": "Force=true,Replace=true",
    "kustomize.toolkit.fluxcd.io/force": "enabled",
}
# Services come after the Jobs (a PreSync hook would run before the generated settings exist).
DEPLOYMENT_WAVE = "2"
OPERATIONS_PORTS = {"herald-api": 9467, "herald-center": 9466, "herald-sender": 9465, "herald-gateway": 9468}
# A staging box differs from a cluster in where things are and how they are reached, never in
# how Herald behaves: these variables may differ between compose and the Kubernetes base.
COMPOSE_MAY_DIFFER = {
    "HERALD_KAFKA_BROKERS", "HERALD_POSTGRES_HOST", "HERALD_POSTGRES_TLS_MODE", "HERALD_POSTGRES_ALLOW_PLAINTEXT",
    # One broker: no replicas to spare.
    "HERALD_KAFKA_TOPICS_REPLICATION_FACTOR", "HERALD_KAFKA_TOPICS_MIN_INSYNC_REPLICAS",
    # Sandbox pushes go to apns-sim on the staging box.
    "HERALD_SENDER_APNS_SANDBOX_HOST", "HERALD_SENDER_APNS_SANDBOX_PORT",
    "HERALD_SENDER_APNS_SANDBOX_TRUST_CERTIFICATE_FILE",
    # Set from the pod's name in Kubernetes; compose's single center uses the default.
    "HERALD_CENTER_NAME",
    # The gateway's name and delivery address come from the pod in Kubernetes; compose names the
    # service (one gateway, reached by its service name).
    "HERALD_GATEWAY_NAME", "HERALD_GATEWAY_DELIVERY_ADDRESS",
}

failures = []


def fail(where, message):
    failures.append(f"{where}: {message}")


def documented_settings():
    """Every environment variable docs/configuration.md names, `_PORT`-style shorthands expanded."""
    names = set()
    for line in (ROOT / "docs/configuration.md").read_text().splitlines():
        tokens = re.findall(r"`(HERALD_[A-Z0-9_]+|_[A-Z0-9_]+)`", line)
        previous = None
        for token in tokens:
            if token.startswith("HERALD_"):
                names.add(token)
                previous = token
            elif previous:
                names.add(previous + token)  # `HERALD_X_PASSWORD` or `_FILE`
                names.add(previous.rsplit("_", 1)[0] + token)  # `HERALD_X_HOST`, `_PORT`
                names.add(re.sub(r"_(PRODUCTION|SANDBOX)_.*", "", previous) + token)
    # "Every secret … may instead come from a file, named by the same variable with _FILE appended."
    return names | {secret + "_FILE" for secret in SECRETS}


def render(overlay):
    try:
        documents = kustomize_render.render(overlay)
    except kustomize_render.KustomizeError as error:
        fail(overlay.name, f"kustomize_render failed: {error}")
        return []
    return [document for document in documents if document]


def pod_environment(pod_spec, config_maps):
    """container name -> {variable: value} from envFrom ConfigMaps and env (fieldRefs as None)."""
    environments = {}
    for container in pod_spec.get("containers", []):
        environment = {}
        for source in container.get("envFrom", []):
            name = source.get("configMapRef", {}).get("name")
            if name not in config_maps:
                fail(container["name"], f"envFrom names ConfigMap {name}, which the overlay does not make")
                continue
            environment.update(config_maps[name])
        for variable in container.get("env", []):
            environment[variable["name"]] = variable.get("value")
        environments[container["name"]] = environment
    return environments


def mounted_files(pod_spec, container):
    """Paths of the files the container sees from Secret and ConfigMap volumes (None: any file)."""
    volumes = {volume["name"]: volume for volume in pod_spec.get("volumes", [])}
    files = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"])
        if volume is None:
            fail(container["name"], f"mounts volume {mount['name']}, which the pod does not declare")
            continue
        source = volume.get("secret") or volume.get("configMap") or {}
        items = source.get("items")
        files[mount["mountPath"]] = None if items is None else {item["path"] for item in items}
    return files


def file_is_mounted(path, files):
    for mount_path, names in files.items():
        prefix = mount_path.rstrip("/") + "/"
        if path.startswith(prefix):
            return names is None or path[len(prefix):] in names
    return False


def sender_drain_seconds(environment):
    value = {name: int(environment.get(name) or default) for name, default in SENDER_DEFAULTS.items()}
    attempts = value["HERALD_SENDER_MAX_ATTEMPTS"]
    backoffs = sum(min(value["HERALD_SENDER_RETRY_BASE_MS"] * 2 ** n, value["HERALD_SENDER_RETRY_MAX_MS"])
                   for n in range(attempts - 1))
    apns = backoffs + attempts * value["HERALD_SENDER_REQUEST_TIMEOUT_MS"]
    # A connected target first waits its batch's turn at the gateways (the batches ahead of it,
    # HERALD_SENDER_MAX_ONLINE_BATCHES_IN_FLIGHT at a time, each up to the online timeout), then
    # its own delivery, and only then, unacknowledged, goes through APNs.
    online = 0
    if (environment.get("HERALD_SENDER_ONLINE") or "true").lower() not in ("false", "0", "no"):
        batches = max(1, value["HERALD_SENDER_MAX_BATCHES_IN_FLIGHT"])
        at_gateways = max(1, min(batches, value["HERALD_SENDER_MAX_ONLINE_BATCHES_IN_FLIGHT"]))
        rounds = -(-(batches - at_gateways) // at_gateways) + 1
        online = rounds * value["HERALD_SENDER_ONLINE_TIMEOUT_MS"]
    return (apns + online) / 1000 + PRODUCER_FLUSH_SECONDS


def check_overlay(overlay, keda_schema, documented):
    documents = render(overlay)
    if not documents:
        return {}
    where = overlay.relative_to(ROOT / "Deploy/kubernetes").as_posix()
    by_kind = {}
    for document in documents:
        by_kind.setdefault(document["kind"], {})[document["metadata"]["name"]] = document
        if document["apiVersion"].startswith("keda.sh/"):
            try:
                jsonschema.validate(document, keda_schema)
            except jsonschema.ValidationError as error:
                fail(where, f"{document['kind']} {document['metadata']['name']}: {error.message} at {list(error.absolute_path)}")
        else:
            try:
                kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
            except Exception as error:  # kubernetes_validate raises several types
                cause = getattr(error, "caused_by", error)
                message = getattr(cause, "message", str(cause)).splitlines()[0][:300]
                path = list(getattr(cause, "absolute_path", []))
                fail(where, f"{document['kind']} {document['metadata']['name']}: {message} at {path}")

    config_maps = {name: document.get("data", {}) for name, document in by_kind.get("ConfigMap", {}).items()}
    for name, data in config_maps.items():
        for variable in data:
            if variable in SECRETS:
                fail(where, f"ConfigMap {name} holds the secret {variable}: mount it and set {variable}_FILE")

    deployments = by_kind.get("Deployment", {})
    workloads = list(deployments.values()) + list(by_kind.get("Job", {}).values())
    environments = {}
    for workload in workloads:
        name = workload["metadata"]["name"]
        pod = workload["spec"]["template"]["spec"]
        container_environments = pod_environment(pod, config_maps)
        for container in pod["containers"]:
            environment = container_environments[container["name"]]
            environments[name] = environment
            files = mounted_files(pod, container)
            for variable, value in environment.items():
                if not variable.startswith("HERALD_"):
                    continue
                if variable not in documented and not variable.startswith("HERALD_KAFKA_PROPERTY_"):
                    fail(where, f"{name} sets {variable}, which docs/configuration.md does not document")
                if variable in SECRETS:
                    fail(where, f"{name} sets the secret {variable} in the clear: mount it and set {variable}_FILE")
                if variable.endswith("_FILE") and value and not file_is_mounted(value, files):
                    fail(where, f"{name}: {variable}={value} is not a file the pod mounts")
        # The kubelet mounts Secret files owned by root with the volume's mode; a non-root user
        # reads them only through fsGroup (the files' group) and the mode's group read bit.
        context = pod.get("securityContext", {})
        user = context.get("runAsUser", 0)
        for volume in pod.get("volumes", []):
            secret = volume.get("secret")
            if not secret or user == 0:
                continue
            mode = secret.get("defaultMode", 0o644)
            if mode & 0o004:
                continue
            if "fsGroup" not in context or not mode & 0o040:
                fail(where, f"{name}: user {user} cannot read Secret volume {volume['name']} (root-owned, mode "
                            f"{mode:04o}): set the pod's fsGroup and a defaultMode with group read (0440)")
        if workload["kind"] == "Deployment":
            container = pod["containers"][0]
            if "startupProbe" not in container:
                fail(where, f"{name}: no startupProbe (migrations run before the operations port listens)")
            port = OPERATIONS_PORTS.get(name)
            named_ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
            for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                http = container.get(probe, {}).get("httpGet")
                if not http or http.get("path") != path:
                    fail(where, f"{name}: {probe} must GET {path}")
                    continue
                probe_port = named_ports.get(http["port"], http["port"])
                if port and probe_port != port:
                    fail(where, f"{name}: {probe} probes port {probe_port}, the operations port is {port}")
            if not pod.get("securityContext", {}).get("runAsNonRoot"):
                fail(where, f"{name} does not set runAsNonRoot")
            own = workload["spec"]["template"]["metadata"]["labels"]
            spread = [c for c in pod.get("topologySpreadConstraints", [])
                      if c.get("topologyKey") == "kubernetes.io/hostname"
                      and c.get("labelSelector", {}).get("matchLabels", {}).items() <= own.items()]
            if not spread:
                fail(where, f"{name}: no topologySpreadConstraints over kubernetes.io/hostname selecting its own pods")
            wave = workload["metadata"].get("annotations", {}).get("argocd.argoproj.io/sync-wave")
            if wave != DEPLOYMENT_WAVE:
                fail(where, f"{name}: argocd.argoproj.io/sync-wave must be {DEPLOYMENT_WAVE} (after the Jobs), not {wave}")
        else:
            annotations = workload["metadata"].get("annotations", {})
            for key, value in JOB_ORDERING.items():
                if annotations.get(key) != value:
                    fail(where, f"Job {name}: annotation {key}: {value} missing (GitOps ordering, Deploy/README.md)")

    check_network_policies(where, by_kind.get("NetworkPolicy", {}).values(), workloads)
    check_kafka_users(where, workloads, environments)

    sender = deployments.get("herald-sender")
    if sender:
        drain = sender_drain_seconds(environments["herald-sender"])
        grace = sender["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30)
        if grace < drain:
            fail(where, f"herald-sender's terminationGracePeriodSeconds {grace} is shorter than its longest drain, {drain:.1f} s")
        print(f"check-kubernetes: {where}: herald-sender drains in at most {drain:.1f} s; grace period {grace} s")

    for scaled in by_kind.get("ScaledObject", {}).values():
        target = scaled["spec"]["scaleTargetRef"]["name"]
        if target not in deployments:
            fail(where, f"ScaledObject {scaled['metadata']['name']} scales {target}, which is not a Deployment here")
            continue
        environment = environments[target]
        partitions = int(environment.get("HERALD_KAFKA_TOPICS_PARTITIONS_JOBS") or 16)
        maximum = scaled["spec"].get("maxReplicaCount", 100)
        if maximum > partitions:
            fail(where, f"ScaledObject maxReplicaCount {maximum} exceeds herald.jobs' {partitions} partitions")
        group = environment.get("HERALD_SENDER_GROUP_ID", "herald-sender")
        lanes = {environment.get("HERALD_SENDER_JOBS_TOPIC", "herald.jobs"): group,
                 environment.get("HERALD_SENDER_TRANSACTIONAL_JOBS_TOPIC", "herald.jobs.transactional"):
                     environment.get("HERALD_SENDER_TRANSACTIONAL_GROUP_ID", group + ".transactional")}
        watched = {trigger["metadata"].get("topic") for trigger in scaled["spec"]["triggers"]}
        for topic in lanes.keys() - watched:
            fail(where, f"ScaledObject {scaled['metadata']['name']} does not watch {topic}'s lag")
        for trigger in scaled["spec"]["triggers"]:
            metadata = trigger["metadata"]
            topic = metadata.get("topic")
            expected = {"bootstrapServers": environment.get("HERALD_KAFKA_BROKERS"),
                        "consumerGroup": lanes.get(topic, group),
                        "topic": topic if topic in lanes else "herald.jobs"}
            for key, value in expected.items():
                if metadata.get(key) != value:
                    fail(where, f"ScaledObject's {key} is {metadata.get(key)}, the senders use {value}")
            reference = trigger.get("authenticationRef", {}).get("name")
            if reference and reference not in by_kind.get("TriggerAuthentication", {}):
                fail(where, f"ScaledObject uses TriggerAuthentication {reference}, which the overlay does not make")
        print(f"check-kubernetes: {where}: KEDA scales {target} up to {maximum} of {partitions} partitions")

    for budget in by_kind.get("PodDisruptionBudget", {}).values():
        selector = budget["spec"]["selector"]["matchLabels"]
        if not any(selector.items() <= d["spec"]["template"]["metadata"]["labels"].items() for d in deployments.values()):
            fail(where, f"PodDisruptionBudget {budget['metadata']['name']} selects no Deployment's pods")
    autoscaled = [a["spec"]["scaleTargetRef"]["name"] for a in by_kind.get("HorizontalPodAutoscaler", {}).values()]
    autoscaled += [s["spec"]["scaleTargetRef"]["name"] for s in by_kind.get("ScaledObject", {}).values()]
    for autoscaler in by_kind.get("HorizontalPodAutoscaler", {}).values():
        if autoscaler["spec"]["scaleTargetRef"]["name"] not in deployments:
            fail(where, f"HorizontalPodAutoscaler {autoscaler['metadata']['name']} targets a Deployment that is not here")
    for target in autoscaled:
        if "replicas" in deployments.get(target, {}).get("spec", {}):
            fail(where, f"{target} sets replicas, which its autoscaler owns (each apply would reset the count)")
    print(f"check-kubernetes: {where}: {len(documents)} objects ({', '.join(sorted(by_kind))})")
    return environments


def check_kafka_users(where, workloads, environments):
    """Each workload that logs in to Kafka does so as a user of its own (whose ACLs fit its role);
    herald-api and herald-migrate, which use no Kafka, hold no Kafka credentials."""
    users = {}
    for workload in workloads:
        name = workload["metadata"]["name"]
        environment = environments.get(name, {})
        if name in ("herald-api", "herald-migrate"):
            held = sorted(v for v in environment if v.startswith(("HERALD_KAFKA_SASL", "HERALD_KAFKA_SSL_KEY")))
            if held:
                fail(where, f"{name} uses no Kafka but is given Kafka credentials: {', '.join(held)}")
            continue
        if not (environment.get("HERALD_KAFKA_SECURITY_PROTOCOL") or "").startswith("sasl"):
            continue
        container = workload["spec"]["template"]["spec"]["containers"][0]
        variable = next((e for e in container.get("env", []) if e["name"] == "HERALD_KAFKA_SASL_USERNAME"), {})
        user = (variable.get("valueFrom", {}).get("secretKeyRef", {}).get("name")
                or environment.get("HERALD_KAFKA_SASL_USERNAME"))
        users.setdefault(user, []).append(name)
    for user, names in users.items():
        if len(names) > 1:
            fail(where, f"{' and '.join(sorted(names))} log in to Kafka as the same user ({user}): give each role its own")
    if users:
        print(f"check-kubernetes: {where}: Kafka users: " + ", ".join(f"{n[0]} as {u}" for u, n in sorted(users.items())))


def selects(policy, labels):
    selector = policy["spec"].get("podSelector", {})
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        value, values = labels.get(expression["key"]), expression.get("values", [])
        matched = {"In": value in values, "NotIn": value not in values,
                   "Exists": value is not None, "DoesNotExist": value is None}.get(expression["operator"])
        if not matched:
            return False
    return True


# Who reaches the brokers: herald-api and herald-migrate have no Kafka credentials (below).
KAFKA_CLIENTS = {"herald-center", "herald-sender", "herald-create-topics"}


def check_network_policies(where, policies, workloads):
    """Every Herald pod isolated both ways; the API's port open; the senders able to reach APNs
    and nobody else; only the centers reaching out to webhook receivers (public addresses)."""
    policies = list(policies)
    for workload in workloads:
        name = workload["metadata"]["name"]
        labels = workload["spec"]["template"]["metadata"]["labels"]
        mine = [p for p in policies if selects(p, labels)]
        types = {t for p in mine for t in p["spec"].get("policyTypes", [])}
        if not {"Ingress", "Egress"} <= types:
            fail(where, f"{name}: no NetworkPolicy isolates its pods for ingress and egress")
        apns = [rule for p in mine for rule in p["spec"].get("egress", [])
                if any(peer.get("ipBlock", {}).get("cidr") == "17.0.0.0/8" for peer in rule.get("to", []))]
        if (name == "herald-sender") != bool(apns):
            fail(where, f"{name}: {'cannot reach' if name == 'herald-sender' else 'may reach'} APNs (17.0.0.0/8)")
        kafka = [rule for p in mine for rule in p["spec"].get("egress", [])
                 if any(port.get("port") == 9092 for port in rule.get("ports", []))]
        if (name in KAFKA_CLIENTS) != bool(kafka):
            fail(where, f"{name}: {'cannot reach' if name in KAFKA_CLIENTS else 'may reach'} Kafka (9092-9096)")
        for policy in mine:
            for rule in policy["spec"].get("egress", []):
                for peer in rule.get("to", []):
                    block = peer.get("ipBlock", {})
                    if block.get("cidr") in ("0.0.0.0/0", "::/0"):
                        if name != "herald-center":
                            fail(where, f"{name}: NetworkPolicy {policy['metadata']['name']} opens the whole internet")
                        private = {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "127.0.0.0/8"}
                        if block["cidr"] == "0.0.0.0/0" and not private <= set(block.get("except", [])):
                            fail(where, f"{name}: webhook egress must leave out private ranges {sorted(private)}")
    api = [p for p in policies if p["metadata"]["name"] == "herald-api-ingress"]
    if not any(port.get("port") == "http" for p in api for rule in p["spec"].get("ingress", [])
               for port in rule.get("ports", [])):
        fail(where, "no NetworkPolicy lets clients reach herald-api's http port")


def check_compose(base_environments, documented):
    compose = yaml.safe_load((ROOT / "Deploy/compose/compose.yaml").read_text())
    services = compose["services"]
    pairs = {"herald-api": "herald-api", "herald-center": "herald-center", "herald-sender": "herald-sender",
             "herald-gateway": "herald-gateway",
             "herald-migrate": "herald-migrate", "herald-create-topics": "herald-create-topics"}
    for service, workload in pairs.items():
        if service not in services:
            fail("compose", f"no service {service}")
            continue
        composed = {k: None if v is None else str(v) for k, v in (services[service].get("environment") or {}).items()}
        kubernetes = {k: v for k, v in base_environments.get(workload, {}).items() if k.startswith("HERALD_")}
        for variable in sorted(set(composed) | set(kubernetes)):
            if variable in COMPOSE_MAY_DIFFER:
                continue
            if variable not in composed:
                fail("compose", f"{service} does not set {variable} (Kubernetes sets {kubernetes[variable]})")
            elif variable not in kubernetes:
                fail("compose", f"{service} sets {variable}, which Kubernetes' {workload} does not")
            elif composed[variable] != kubernetes[variable]:
                fail("compose", f"{service}: {variable} is {composed[variable]} here, {kubernetes[variable]} in Kubernetes")
        for variable in composed:
            if variable.startswith("HERALD_") and variable not in documented:
                fail("compose", f"{service} sets {variable}, which docs/configuration.md does not document")
    print(f"check-kubernetes: compose: {len(pairs)} Herald services set what Kubernetes' base sets")
    # Each service builds the image it runs, from the Containerfile's stage for it: Herald's
    # services the production image, apns-sim its own (the production image has none).
    targets = {**{service: "herald" for service in pairs}, "apns-sim": "herald-apns-sim"}
    stages = set(re.findall(r"^FROM \S+ AS (\S+)$", (ROOT / "Deploy/container/Containerfile").read_text(), re.M))
    for service, target in targets.items():
        build = (services.get(service) or {}).get("build") or {}
        if build.get("target") != target or target not in stages:
            fail("compose", f"{service} must build the Containerfile's stage {target} (build: {build})")
        elif (ROOT / "Deploy/compose" / build.get("context", ".") / build.get("dockerfile", "Dockerfile")).resolve() \
                != (ROOT / "Deploy/container/Containerfile").resolve():
            fail("compose", f"{service} builds from {build.get('context')}/{build.get('dockerfile')}, not the Containerfile")
    print(f"check-kubernetes: compose: every service builds the image it runs ({', '.join(sorted(set(targets.values())))})")


def main():
    keda_schema = json.loads((ROOT / "Deploy/kubernetes/schemas/keda.schema.json").read_text())
    documented = documented_settings()
    base = check_overlay(ROOT / "Deploy/kubernetes/base", keda_schema, documented)
    for overlay in sorted((ROOT / "Deploy/kubernetes/overlays").iterdir()):
        check_overlay(overlay, keda_schema, documented)
    check_compose(base, documented)
    if failures:
        for failure in failures:
            print(f"check-kubernetes: {failure}", file=sys.stderr)
        sys.exit(1)
    print("check-kubernetes: every manifest valid, Herald's rules hold")


if __name__ == "__main__":
    main()
