#!/usr/bin/env python3
"""Checks that every module a target imports is declared in Package.swift: another target of
the package, or a product of a package it depends on. (SwiftPM builds a target that imports a
module it only gets through another dependency, until that dependency changes.) System modules
(Foundation, Glibc, Testing, …) need no declaration. And the other way round: every dependency a
Swift target declares is imported by one of its files, so the module graph Package.swift shows
is the one the code uses (a C target includes its dependencies' headers instead, and is not
checked that way).

    swift package dump-package | scripts/check-imports.py
"""
import json
import os
import re
import sys

SYSTEM = {
    "Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Darwin", "Musl", "Dispatch",
    "Synchronization", "Testing", "XCTest", "_Concurrency", "os", "CoreFoundation", "Network", "UserNotifications",
}

# `import X`, `@testable import X`, `public import X`, `@preconcurrency import struct X.Y`, …
IMPORT = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+"
    r"(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)")

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
    imported = set()
    swift_files = 0
    for root, _, files in os.walk(path):
        for name in files:
            if not name.endswith(".swift"):
                continue
            file = os.path.join(root, name)
            swift_files += 1
            with open(file, encoding="utf-8") as handle:
                for line in handle:
                    match = IMPORT.match(line)
                    if not match:
                        continue
                    module = match.group(1)
                    imported.add(module)
                    if module in SYSTEM or module in declared:
                        continue
                    problems.append(f"{file}: imports {module}, which target {target['name']} does not declare")
    if swift_files:
        for module in sorted(declared - imported):
            problems.append(f"{path}: target {target['name']} declares {module}, which none of its files imports")
for problem in sorted(set(problems)):
    print(problem, file=sys.stderr)
if problems:
    print(f"imports: {len(set(problems))} problems; declare in Package.swift what a target imports, and only that",
          file=sys.stderr)
    sys.exit(1)
print(f"imports: every module imported by the {len(package['targets'])} targets is declared, and every one declared is imported")
