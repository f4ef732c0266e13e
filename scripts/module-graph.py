#!/usr/bin/env python3
"""Prints the module graph of Herald's libraries: for each library target, the Herald targets it
depends on directly, and the ones it reaches through them. With --reaches NAME, the library
targets that reach NAME (a Herald target, or a product such as NIOCore named by one of the targets
on the way): a room's neighbours.

    swift package dump-package | scripts/module-graph.py
    swift package dump-package | scripts/module-graph.py --reaches CNGHTTP2
    swift package dump-package | scripts/module-graph.py --check

--check fails when a module reaches one it must not, or depends on anything where it must depend
on nothing (RULES and STANDALONE below: the edges an architecture review removed, held by `make
test`). Products are followed one step (what a target names), not into other packages.
"""
import json
import sys

# (module, what it must never reach, directly or through others, and why)
RULES = [
    (module, "CNGHTTP2", "it speaks APNs' words (HeraldAPNsVocabulary), it does not open connections")
    for module in ("HeraldStore", "HeraldAPI", "HeraldConsole", "HeraldCenter", "HeraldAPNsVocabulary")
] + [
    ("HeraldCore", "HeraldRecords", "configuration does not know Kafka's record formats"),
] + [
    ("HeraldDomain", forbidden, "the domain is what Herald knows without a database or a network")
    for forbidden in ("PostgresNIO", "CLibPQ", "NIOCore", "CNGHTTP2", "CRdKafka")
] + [
    ("HeraldAccess", forbidden, "who may come in is decided the same for HTTP and the gateway, apart from both")
    for forbidden in ("Hummingbird", "HeraldAPI", "HeraldGateway")
] + [
    ("HeraldGateway", forbidden, "the gateway holds connections; HTTP APIs and APNs are other rooms")
    for forbidden in ("Hummingbird", "HeraldAPI", "CNGHTTP2")
] + [
    ("HeraldMetrics", "HeraldCore", "the operations server and metrics stand below configuration"),
] + [
    ("HeraldCLI", forbidden, "the operator's CLI is an API client; the server tools are herald-admin's")
    for forbidden in ("CLibPQ", "CRdKafka", "CNGHTTP2")
]

# Modules that must depend on nothing at all (Foundation and the standard library only).
STANDALONE = {"HeraldAPNsVocabulary": "the vocabulary is plain Swift and Foundation, for every module to use"}

package = json.load(sys.stdin)
targets = {t["name"]: t for t in package["targets"]}


def direct(name):
    deps = []
    for dependency in targets[name].get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                deps.append((kind, dependency[kind][0]))
    return deps


def herald_deps(name):
    return sorted(d for kind, d in direct(name) if kind != "product" and d in targets)


def reach(name, seen=None):
    seen = set() if seen is None else seen
    for d in herald_deps(name):
        if d not in seen:
            seen.add(d)
            reach(d, seen)
    return seen


def products(name):
    """External products linked, directly or through Herald targets."""
    found = {d for kind, d in direct(name) if kind == "product"}
    for d in reach(name):
        found |= {p for kind, p in direct(d) if kind == "product"}
    return found


libraries = [t["name"] for t in package["targets"] if t["type"] == "regular"]
if len(sys.argv) == 3 and sys.argv[1] == "--reaches":
    wanted = sys.argv[2]
    for name in libraries:
        if wanted in reach(name) or wanted in products(name):
            print(name)
    sys.exit(0)

if sys.argv[1:] == ["--check"]:
    broken = [f"{module} is no target of Package.swift: update RULES" for module in {r[0] for r in RULES} - set(targets)]
    broken += [
        f"{module} depends on {', '.join(d for _, d in direct(module))}: {why}"
        for module, why in STANDALONE.items()
        if module in targets and direct(module)
    ]
    broken += [
        f"{module} reaches {forbidden}: {why}"
        for module, forbidden, why in RULES
        if module in targets and (forbidden in reach(module) or forbidden in products(module))
    ]
    for line in broken:
        print(f"module graph: {line}", file=sys.stderr)
    if broken:
        sys.exit(1)
    print(f"module graph: all {len(RULES) + len(STANDALONE)} rules hold")
    sys.exit(0)

for name in libraries:
    deps = herald_deps(name)
    if not deps:
        print(f"{name}: (nothing of Herald's)")
        continue
    indirect = sorted(reach(name) - set(deps))
    line = f"{name} → {', '.join(deps)}"
    if indirect:
        line += f"   (through them: {', '.join(indirect)})"
    print(line)
