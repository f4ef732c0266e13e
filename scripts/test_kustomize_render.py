#!/usr/bin/env python3
"""Tests scripts/kustomize_render.py against kustomize's own output (run by scripts/test-deploy.sh).

  - scripts/kustomize-fixtures/overlay (on ../base; every supported feature) renders to what
    kustomize v5 rendered once, scripts/kustomize-fixtures/expected.yaml;
  - when kubectl is on PATH, Herald's Deploy/kubernetes base and overlays render as `kubectl
    kustomize` renders them;
  - what the renderer does not support (fields, patch forms, references it cannot rewrite) fails
    with an error naming it, and the name hash is kustomize's.
Documents are compared as sets keyed by (kind, namespace, name), after a round trip through the
renderer's YAML output; their order does not matter. Exits non-zero, saying what differs, on failure.
"""
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap

import yaml

SCRIPTS = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))
sys.dont_write_bytecode = True  # no scripts/__pycache__ left in the working tree
import kustomize_render  # noqa: E402

ROOT = SCRIPTS.parent
FIXTURES = SCRIPTS / "kustomize-fixtures"
failures = []


def keyed(documents, where):
    result = {}
    for document in documents:
        metadata = document.get("metadata") or {}
        key = (document.get("kind"), metadata.get("namespace"), metadata.get("name"))
        if key in result:
            failures.append(f"{where}: {key} appears twice")
        result[key] = document
    return result


def differences(expected, actual, path="/"):
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        for key in sorted(set(expected) | set(actual), key=str):
            where = f"{path.rstrip('/')}/{key}"
            if key not in actual:
                found.append(f"{where}: missing (expected {expected[key]!r})")
            elif key not in expected:
                found.append(f"{where}: unexpected {actual[key]!r}")
            else:
                found += differences(expected[key], actual[key], where)
        return found
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [line for index, (e, a) in enumerate(zip(expected, actual))
                for line in differences(e, a, f"{path.rstrip('/')}/{index}")]
    if expected != actual or type(expected) is not type(actual):
        return [f"{path}: expected {expected!r}, got {actual!r}"]
    return []


def compare(where, expected_documents, actual_documents):
    expected, actual = keyed(expected_documents, where + " (expected)"), keyed(actual_documents, where)
    before = len(failures)
    for key in sorted(expected.keys() - actual.keys(), key=str):
        failures.append(f"{where}: missing {key}")
    for key in sorted(actual.keys() - expected.keys(), key=str):
        failures.append(f"{where}: extra {key}")
    for key in sorted(expected.keys() & actual.keys(), key=str):
        for line in differences(expected[key], actual[key]):
            failures.append(f"{where}: {key} {line}")
    if len(failures) == before:
        print(f"test-kustomize-render: {where}: {len(actual)} objects as kustomize renders them")


def rendered(directory):
    """The renderer's documents as a reader of its YAML output sees them."""
    return list(yaml.safe_load_all(kustomize_render.to_yaml(kustomize_render.render(directory))))


def check_fixture():
    expected = list(yaml.safe_load_all((FIXTURES / "expected.yaml").read_text()))
    compare("fixture overlay", expected, rendered(FIXTURES / "overlay"))


def check_herald_with_kubectl():
    if shutil.which("kubectl") is None:
        print("test-kustomize-render: kubectl not found: only the fixtures compared")
        return
    directories = [ROOT / "Deploy/kubernetes/base"] + sorted((ROOT / "Deploy/kubernetes/overlays").iterdir())
    for directory in directories:
        where = directory.relative_to(ROOT).as_posix()
        result = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True)
        if result.returncode != 0:
            failures.append(f"{where}: kubectl kustomize failed: {result.stderr.strip()}")
            continue
        compare(where + " (against kubectl kustomize)", list(yaml.safe_load_all(result.stdout)), rendered(directory))


# Each case: a kustomization directory (file name -> text) and words the error must contain.
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: app:1
          ports:
            - containerPort: 80
"""
UNSUPPORTED = [
    ("a kustomization field", {"kustomization.yaml": "namePrefix: x-\nresources: [app.yaml]\n"}, "namePrefix"),
    ("a Component", {"kustomization.yaml": "kind: Component\n"}, "Component"),
    ("a generator's files", {"kustomization.yaml": "configMapGenerator:\n  - name: c\n    files: [app.yaml]\n"}, "files"),
    ("a generator's options", {"kustomization.yaml": "secretGenerator:\n  - name: s\n    literals: [a=b]\n"
                               "    options:\n      disableNameSuffixHash: true\n"}, "options"),
    ("behavior replace", {"kustomization.yaml": "configMapGenerator:\n  - name: c\n    behavior: replace\n"
                          "    literals: [a=b]\n"}, "replace"),
    ("merge into nothing", {"kustomization.yaml": "configMapGenerator:\n  - name: c\n    behavior: merge\n"
                            "    literals: [a=b]\n"}, "merge"),
    ("an env line without '='", {"kustomization.yaml": "configMapGenerator:\n  - name: c\n    envs: [a.env]\n",
                                 "a.env": "FROM_ENVIRONMENT\n"}, "environment"),
    ("labels includeSelectors", {"kustomization.yaml": "resources: [app.yaml]\nlabels:\n  - pairs: {a: b}\n"
                                 "    includeSelectors: true\n"}, "includeSelectors"),
    ("labels includeTemplates", {"kustomization.yaml": "resources: [app.yaml]\nlabels:\n  - pairs: {a: b}\n"
                                 "    includeTemplates: true\n"}, "includeTemplates"),
    ("an image digest", {"kustomization.yaml": "resources: [app.yaml]\nimages:\n  - name: app\n"
                         "    digest: sha256:0123\n"}, "digest"),
    ("replicas of nothing", {"kustomization.yaml": "resources: [app.yaml]\nreplicas:\n  - name: other\n"
                             "    count: 2\n"}, "replicas"),
    ("patch options", {"kustomization.yaml": "resources: [app.yaml]\npatches:\n  - target: {kind: Deployment}\n"
                       "    options: {allowNameChange: true}\n    patch: '[]'\n"}, "options"),
    ("a target's labelSelector", {"kustomization.yaml": "resources: [app.yaml]\npatches:\n  - target:\n"
                                  "      labelSelector: a=b\n    patch: '[]'\n"}, "labelSelector"),
    ("JSON6902 move", {"kustomization.yaml": "resources: [app.yaml]\npatches:\n  - target: {kind: Deployment}\n"
                       "    patch: '[{op: move, from: /spec, path: /x}]'\n"}, "move"),
    ("JSON6902 on a missing path", {"kustomization.yaml": "resources: [app.yaml]\npatches:\n"
                                    "  - target: {kind: Deployment}\n    patch: '[{op: remove, path: /spec/replicas}]'\n"},
     "no such path"),
    ("a JSON6902 patch without target", {"kustomization.yaml": "resources: [app.yaml]\npatches:\n"
                                         "  - patch: '[{op: remove, path: /spec}]'\n"}, "target"),
    ("merging a list without a known key", {
        "kustomization.yaml": "resources: [app.yaml]\npatches:\n  - path: ports.yaml\n",
        "ports.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec:\n  template:\n"
                      "    spec:\n      containers:\n        - name: app\n          ports: [{containerPort: 81}]\n"},
     "ports"),
    ("a $patch directive", {
        "kustomization.yaml": "resources: [app.yaml]\npatches:\n  - target: {kind: Deployment}\n    path: delete.yaml\n",
        "delete.yaml": "spec:\n  template:\n    spec:\n      containers:\n        - name: app\n          $patch: delete\n"},
     "$patch"),
    ("a reference the renderer cannot rewrite", {
        "kustomization.yaml": "resources: [ingress.yaml]\nsecretGenerator:\n  - name: tls\n    literals: [a=b]\n",
        "ingress.yaml": "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i}\nspec:\n"
                        "  tls: [{secretName: tls}]\n"},
     "spec.tls[0].secretName"),
    ("a missing resource", {"kustomization.yaml": "resources: [nowhere.yaml]\n"}, "nowhere.yaml"),
    ("a key given twice (kustomize refuses it)", {"kustomization.yaml": "resources: [twice.yaml]\n",
                                                   "twice.yaml": "kind: ConfigMap\nmetadata: {name: c}\n"
                                                                 "data: {a: b}\ndata: {c: d}\n"},
     "already defined"),
]


def check_unsupported():
    for description, files, words in UNSUPPORTED:
        with tempfile.TemporaryDirectory() as directory:
            path = pathlib.Path(directory)
            (path / "app.yaml").write_text(DEPLOYMENT)
            for name, text in files.items():
                (path / name).write_text(textwrap.dedent(text))
            try:
                kustomize_render.render(path)
            except kustomize_render.KustomizeError as error:
                if words not in str(error):
                    failures.append(f"unsupported {description}: the error does not say {words!r}: {error}")
                continue
            failures.append(f"unsupported {description}: rendered without an error")
    print(f"test-kustomize-render: {len(UNSUPPORTED)} unsupported or invalid kustomizations checked")


def check_hash():
    # Suffixes kubectl kustomize (kustomize v5.5.0) gave a ConfigMap and a Secret with literals a=b.
    config_map = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}
    secret = {"kind": "Secret", "metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "Yg=="}}
    for body, expected in ((config_map, "4h2mbtbbt6"), (secret, "k695gkmbtk")):
        if kustomize_render.name_hash(body) != expected:
            failures.append(f"name hash of {body}: {kustomize_render.name_hash(body)}, kustomize's is {expected}")
    if kustomize_render.go_json({"b": "<&>", "a": "é"}) != '{"a":"é","b":"\\u003c\\u0026\\u003e"}':
        failures.append(f"go_json does not encode as Go's json.Marshal: {kustomize_render.go_json({'b': '<&>', 'a': 'é'})}")


def main():
    check_hash()
    check_fixture()
    check_herald_with_kubectl()
    check_unsupported()
    if failures:
        for failure in failures:
            print(f"test-kustomize-render: {failure}", file=sys.stderr)
        sys.exit(1)
    print("test-kustomize-render: the renderer renders as kustomize does")


if __name__ == "__main__":
    main()
