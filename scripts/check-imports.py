#!/usr/bin/env python3
"""Checks that every module a target imports is declared in Package.swift: another target of
the package, or a product of a package it depends on. (SwiftPM builds a target that imports a
module it only gets through another dependency, until that dependency changes.) System modules
(Foundation, Glibc, Testing, …) need no declaration.

    swift package dump-package | scripts/check-imports.py
"""
import json
import os
import re
import sys

SYSTEM = {
    "Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Darwin", "Musl", "Dispatch",
    "Synchronization", "Testing", "XCTest", "_Concurrency", "os", "CoreFoundation",
}

package = json.load(sys.stdin)
problems = []
for target in package["targets"]:
    if target["type"] == "system":
        continue
    declared = set()
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                declared.add(dependency[kind][0])
    path = target.get("path") or os.path.join("Tests" if target["type"] == "test" else "Sources", target["name"])
    for root, _, files in os.walk(path):
        for name in files:
            if not name.endswith(".swift"):
                continue
            file = os.path.join(root, name)
            with open(file, encoding="utf-8") as handle:
                for line in handle:
                    match = re.match(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*import\s+(?:(?:struct|class|enum|protocol|func|var|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)", line)
                    if not match:
                        continue
                    module = match.group(1)
                    if module in SYSTEM or module in declared:
                        continue
                    problems.append(f"{file}: imports {module}, which target {target['name']} does not declare")
for problem in sorted(set(problems)):
    print(problem, file=sys.stderr)
if problems:
    print(f"imports: {len(set(problems))} undeclared; add them to the target's dependencies in Package.swift", file=sys.stderr)
    sys.exit(1)
print(f"imports: every module imported by the {len(package['targets'])} targets is declared")
