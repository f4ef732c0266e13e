#!/usr/bin/env python3
"""Renders a kustomization directory as `kubectl kustomize DIR` does, for the subset Herald uses.

Why: scripts/check-kubernetes.py renders Deploy/kubernetes/overlays/* to check them, and Debian 12
ships no kubectl able to (its kubernetes-client 1.20 embeds kustomize v2, which cannot read these
files). This renderer needs PyYAML and the standard library only. scripts/test_kustomize_render.py
compares it with output kustomize v5 produced.

Supported (anything else in a kustomization, a generator, a patch or a target is an error that
names it, never silently ignored):
  - resources: YAML files (several documents each) and directories with their own kustomization;
  - configMapGenerator / secretGenerator: `envs` files and `literals`, `behavior` create or merge;
    generated names get kustomize's content-hash suffix, and references to them in pod specs
    (envFrom, env valueFrom, volumes, projected volumes, imagePullSecrets) are rewritten;
  - namespace, labels (`pairs`: metadata.labels only, as kustomize does without includeSelectors),
    replicas, images (newName, newTag);
  - patches, inline or from a `path`: JSON6902 (add, remove, replace) on a target (kind and name,
    regexes anchored as kustomize anchors them), or a strategic merge patch on a target or on the
    object it names, whose lists are the pod spec's containers/initContainers/volumes/env/
    imagePullSecrets (merged by name), volumeMounts (by mountPath), or lists of scalars (replaced).
Per kustomization, as kustomize orders them: resources, generators, then patches, namespace,
labels, replicas, images; name hashes and reference rewriting come last, once, at the top. A
generated name still found in a field this renderer does not rewrite is an error. YAML is read as
kustomize reads it (only true/false are booleans; a key given twice is an error).

    python3 scripts/kustomize_render.py DIR      # prints the rendered multi-document YAML
"""
import base64
import copy
import dataclasses
import hashlib
import json
import os
import pathlib
import re
import sys

import yaml


class KustomizeError(Exception):
    """A kustomization this renderer cannot render (unsupported, or invalid as kustomize says)."""


KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
KUSTOMIZATION_FIELDS = {"apiVersion", "kind", "resources", "namespace", "labels", "configMapGenerator",
                        "secretGenerator", "replicas", "images", "patches"}
GENERATOR_FIELDS = {"name", "behavior", "envs", "literals"}
# Kinds kustomize never gives a namespace (the built-in cluster-scoped ones Herald could meet).
CLUSTER_SCOPED = {"Namespace", "Node", "PersistentVolume", "ClusterRole", "StorageClass",
                  "VolumeAttachment", "CSIDriver", "CSINode", "PriorityClass", "RuntimeClass", "IngressClass",
                  "CertificateSigningRequest", "ComponentStatus", "FlowSchema", "PriorityLevelConfiguration"}
# Kinds whose other fields kustomize's namespace transformer also changes: not implemented here.
NAMESPACE_REFERRERS = {"RoleBinding", "ClusterRoleBinding", "MutatingWebhookConfiguration",
                       "ValidatingWebhookConfiguration", "APIService", "CustomResourceDefinition"}
REPLICATED_KINDS = {"Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"}
# Strategic merge: the lists merged element by element, and the key that identifies an element.
MERGE_KEYS = {"containers": "name", "initContainers": "name", "volumes": "name", "env": "name",
              "imagePullSecrets": "name", "volumeMounts": "mountPath"}
# kustomize's output order: these kinds first, in this order, ValidatingWebhookConfiguration last,
# the others between them by group_version_kind; then by namespace and name.
ORDER_FIRST = ["Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition",
               "MutatingWebhookConfiguration", "ServiceAccount", "PodSecurityPolicy", "Role", "ClusterRole",
               "RoleBinding", "ClusterRoleBinding", "ConfigMap", "Secret", "Service", "LimitRange",
               "PriorityClass", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget"]
ORDER_LAST = ["ValidatingWebhookConfiguration"]


class _Loader(yaml.SafeLoader):
    """YAML read as kustomize (go-yaml v3) reads it: only true/false are booleans, dates stay strings,
    and a key given twice in a mapping is an error (PyYAML would keep the last silently)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, str):
                if key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"mapping key {key!r} already defined",
                                                            key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers
            if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool",
                              re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def read_text(path):
    try:
        return pathlib.Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise KustomizeError(f"cannot read {path}: {error.strerror}") from None


def load_documents(text, where):
    try:
        return [document for document in yaml.load_all(text, Loader=_Loader) if document is not None]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise KustomizeError(f"{where}{at}: not valid YAML: {getattr(error, 'problem', None) or error}") from None


@dataclasses.dataclass
class Resource:
    body: dict
    origin: str  # the file (or generator) it came from, for error messages
    needs_hash: bool = False  # a generated ConfigMap or Secret: gets the name suffix at the end

    @property
    def kind(self):
        return self.body.get("kind")

    @property
    def name(self):
        return self.body.get("metadata", {}).get("name")

    @property
    def namespace(self):
        return self.body.get("metadata", {}).get("namespace")

    def id(self):
        return (self.body.get("apiVersion"), self.kind, self.namespace, self.name)

    def describe(self):
        return f"{self.kind} {self.name} ({self.origin})"


# ----------------------------------------------------------------------------------------------
# The build


def render(directory):
    """The documents `kubectl kustomize directory` prints, as Python objects."""
    resources = accumulate(pathlib.Path(directory))
    renamed = add_name_hashes(resources)
    rewrite_references(resources, renamed)
    resources.sort(key=output_order)
    return [resource.body for resource in resources]


def output_order(resource):
    kind = resource.kind
    rank = ORDER_FIRST.index(kind) - len(ORDER_FIRST) if kind in ORDER_FIRST else \
        1 + ORDER_LAST.index(kind) if kind in ORDER_LAST else 0
    group, _, version = resource.body.get("apiVersion", "").rpartition("/")
    return rank, f"{group or '~G'}_{version or '~V'}_{kind}", resource.namespace or "", resource.name


def accumulate(directory):
    """One kustomization's resources, its generators and transformers applied (names not hashed)."""
    kustomization = load_kustomization(directory)
    resources = []
    for entry in kustomization.get("resources") or []:
        if not isinstance(entry, str):
            raise KustomizeError(f"{directory}: resource {entry!r} is not a path")
        path = pathlib.Path(os.path.normpath(directory / entry))  # a/b/../c is a/c, as in kustomize
        if path.is_dir():
            found = accumulate(path)
        elif path.is_file():
            found = [Resource(document, str(path)) for document in load_documents(read_text(path), path)]
            for resource in found:
                check_resource(resource)
        else:
            raise KustomizeError(f"{directory}: resource {entry} is neither a file nor a directory "
                                 f"(remote resources are not supported)")
        for resource in found:
            add_resource(resources, resource)
    for kind, field in (("ConfigMap", "configMapGenerator"), ("Secret", "secretGenerator")):
        for arguments in kustomization.get(field) or []:
            generate(kind, arguments, directory, resources)
    for patch in kustomization.get("patches") or []:
        apply_patch(patch, directory, resources)
    if kustomization.get("namespace"):
        set_namespace(kustomization["namespace"], resources, directory)
    for labels in kustomization.get("labels") or []:
        add_labels(labels, resources, directory)
    for replicas in kustomization.get("replicas") or []:
        set_replicas(replicas, resources, directory)
    for image in kustomization.get("images") or []:
        set_image(image, resources, directory)
    return resources


def load_kustomization(directory):
    found = [directory / name for name in KUSTOMIZATION_FILES if (directory / name).is_file()]
    if len(found) != 1:
        raise KustomizeError(f"{directory}: expected one kustomization file ({', '.join(KUSTOMIZATION_FILES)}), "
                             f"found {len(found)}")
    documents = load_documents(read_text(found[0]), found[0])
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise KustomizeError(f"{found[0]}: expected one mapping")
    kustomization = documents[0]
    unsupported = sorted(set(kustomization) - KUSTOMIZATION_FIELDS)
    if unsupported:
        raise KustomizeError(f"{found[0]}: unsupported kustomization field(s): {', '.join(unsupported)}")
    if kustomization.get("kind", "Kustomization") != "Kustomization":
        raise KustomizeError(f"{found[0]}: unsupported kind {kustomization['kind']} (only Kustomization)")
    return kustomization


def check_resource(resource):
    body = resource.body
    if not isinstance(body, dict) or not body.get("kind") or not isinstance(body.get("metadata"), dict) \
            or not body["metadata"].get("name"):
        raise KustomizeError(f"{resource.origin}: every document needs a kind and a metadata.name")
    if body["kind"] == "List" or (body["kind"].endswith("List") and "items" in body):
        raise KustomizeError(f"{resource.origin}: List documents are not supported")


def add_resource(resources, resource):
    for other in resources:
        if other.id() == resource.id():
            raise KustomizeError(f"{resource.describe()}: already added from {other.origin}")
    resources.append(resource)


def select(resources, kind, name):
    return [resource for resource in resources if resource.kind == kind and resource.name == name]


# ----------------------------------------------------------------------------------------------
# Generators


def generate(kind, arguments, directory, resources):
    where = f"{directory}: {kind} generator {arguments.get('name')}"
    unsupported = sorted(set(arguments) - GENERATOR_FIELDS)
    if unsupported:
        raise KustomizeError(f"{where}: unsupported field(s): {', '.join(unsupported)}")
    if not arguments.get("name"):
        raise KustomizeError(f"{where}: no name")
    pairs = []
    for env_file in arguments.get("envs") or []:
        pairs += read_env_file(directory / env_file)
    for literal in arguments.get("literals") or []:
        pairs.append(parse_literal(literal, where))
    data = {}
    for key, value in pairs:
        if not re.fullmatch(r"[-._a-zA-Z0-9]+", key):
            raise KustomizeError(f"{where}: {key!r} is not a valid {kind} key")
        if key in data:
            raise KustomizeError(f"{where}: key {key} is given twice")
        data[key] = value
    if kind == "Secret":
        data = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}

    behavior = arguments.get("behavior", "create")
    existing = select(resources, kind, arguments["name"])
    if behavior == "create":
        body = {"apiVersion": "v1", "kind": kind, "metadata": {"name": arguments["name"]}, "data": data}
        if kind == "Secret":
            body["type"] = "Opaque"
        add_resource(resources, Resource(body, where, needs_hash=True))
    elif behavior == "merge":
        if len(existing) != 1:
            raise KustomizeError(f"{where}: behavior merge needs exactly one {kind} {arguments['name']} "
                                 f"from the resources, found {len(existing)}")
        existing[0].body.setdefault("data", {}).update(data)
        existing[0].needs_hash = True
    else:
        raise KustomizeError(f"{where}: unsupported behavior {behavior} (create or merge)")


def read_env_file(path):
    """KEY=VALUE lines as kustomize reads them: leading blanks dropped, # comments, no quote removal."""
    pairs = []
    for number, line in enumerate(read_text(path).splitlines()):
        if number == 0:
            line = line.removeprefix("\ufeff")
        line = line.lstrip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise KustomizeError(f"{path}:{number + 1}: {line!r} has no '=' (values taken from the "
                                 f"environment are not supported)")
        key, value = line.split("=", 1)
        if not re.fullmatch(r"[-._a-zA-Z][-._a-zA-Z0-9]*", key):
            raise KustomizeError(f"{path}:{number + 1}: {key!r} is not a valid variable name")
        pairs.append((key, value))
    return pairs


def parse_literal(literal, where):
    """KEY=VALUE; kustomize drops one pair of matching quotes around the value."""
    if not isinstance(literal, str) or "=" not in literal:
        raise KustomizeError(f"{where}: literal {literal!r} is not KEY=VALUE")
    key, value = literal.split("=", 1)
    if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        value = value[1:-1]
    return key, value


def go_json(value):
    """json.Marshal's encoding: sorted keys, no spaces, UTF-8, and <, >, & escaped as for HTML."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for character in "<>&\u2028\u2029":
        text = text.replace(character, f"\\u{ord(character):04x}")
    return text


def name_hash(body):
    """kustomize's suffix: the SHA-256 of the object's JSON, its first 10 hex digits, with 0 1 3 a e
    turned into g h k m t (so that no suffix spells a word or is all digits).

    The JSON is {"data", "kind", "name"} (a Secret adds "type"), but kustomize v5 looks the name up
    as one field called "metadata/name", which no object has: "name" is always "". Two generated
    objects with the same data get the same suffix (checked against kustomize v5.5.0's names)."""
    encoded = {"kind": body["kind"], "name": "", "data": body.get("data", "")}
    if body["kind"] == "ConfigMap":
        if isinstance(body.get("binaryData"), dict):
            encoded["binaryData"] = body["binaryData"]
    else:
        encoded["type"] = body.get("type", "")
        if isinstance(body.get("stringData"), dict):
            encoded["stringData"] = body["stringData"]
    digest = hashlib.sha256(go_json(encoded).encode()).hexdigest()
    return digest[:10].translate(str.maketrans("013ae", "ghkmt"))


def add_name_hashes(resources):
    """Suffixes every generated object's name; returns {(kind, namespace, old name): new name}."""
    renamed = {}
    for resource in resources:
        if resource.needs_hash:
            new_name = f"{resource.name}-{name_hash(resource.body)}"
            renamed[(resource.kind, resource.namespace, resource.name)] = new_name
            resource.body["metadata"]["name"] = new_name
    return renamed


# ----------------------------------------------------------------------------------------------
# References to generated names


def pod_specs(body):
    spec = body.get("spec") or {}
    kind = body.get("kind")
    if kind == "Pod":
        yield spec
    elif kind in REPLICATED_KINDS | {"DaemonSet", "Job"}:
        yield (spec.get("template") or {}).get("spec") or {}
    elif kind == "CronJob":
        yield (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}


def pod_references(pod):
    """(kind, mapping, key) for every name in a pod spec that kustomize rewrites to a generated name."""
    for volume in pod.get("volumes") or []:
        if "configMap" in volume:
            yield "ConfigMap", volume["configMap"], "name"
        if "secret" in volume:
            yield "Secret", volume["secret"], "secretName"
        for source in (volume.get("projected") or {}).get("sources") or []:
            for kind, field in (("ConfigMap", "configMap"), ("Secret", "secret")):
                if field in source:
                    yield kind, source[field], "name"
    for reference in pod.get("imagePullSecrets") or []:
        yield "Secret", reference, "name"
    for container in (pod.get("containers") or []) + (pod.get("initContainers") or []):
        for variable in container.get("env") or []:
            value_from = variable.get("valueFrom") or {}
            if "configMapKeyRef" in value_from:
                yield "ConfigMap", value_from["configMapKeyRef"], "name"
            if "secretKeyRef" in value_from:
                yield "Secret", value_from["secretKeyRef"], "name"
        for source in container.get("envFrom") or []:
            if "configMapRef" in source:
                yield "ConfigMap", source["configMapRef"], "name"
            if "secretRef" in source:
                yield "Secret", source["secretRef"], "name"


def rewrite_references(resources, renamed):
    for resource in resources:
        for pod in pod_specs(resource.body):
            for kind, holder, key in pod_references(pod):
                new_name = renamed.get((kind, resource.namespace, holder.get(key)))
                if new_name:
                    holder[key] = new_name
    # Any other field still naming a generated object: a reference this renderer does not know
    # how kustomize treats. Refuse rather than guess.
    old_names = {(namespace, name): new for (_, namespace, name), new in renamed.items()}
    for resource in resources:
        for path, value in leaves(resource.body):
            new_name = old_names.get((resource.namespace, value))
            if new_name and path != "metadata.name":
                raise KustomizeError(
                    f"{resource.describe()}: {path} names {value}, a generated object now called "
                    f"{new_name}; this renderer does not rewrite references in that field")


def leaves(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    elif isinstance(value, str):
        yield path, value


# ----------------------------------------------------------------------------------------------
# Transformers


def set_namespace(namespace, resources, directory):
    for resource in resources:
        if resource.kind in NAMESPACE_REFERRERS:
            raise KustomizeError(f"{directory}: namespace with {resource.describe()} is not supported "
                                 f"(kustomize also changes namespaces inside such objects)")
        if resource.kind not in CLUSTER_SCOPED:
            resource.body["metadata"]["namespace"] = namespace
    ids = [resource.id() for resource in resources]
    if len(set(ids)) != len(ids):
        raise KustomizeError(f"{directory}: namespace {namespace} makes two objects the same")


def add_labels(entry, resources, directory):
    where = f"{directory}: labels"
    unsupported = sorted(field for field, value in entry.items()
                         if field != "pairs" and not (field in ("includeSelectors", "includeTemplates") and value is False))
    if unsupported:
        raise KustomizeError(f"{where}: unsupported field(s): {', '.join(unsupported)} "
                             f"(only pairs, added to metadata.labels)")
    pairs = entry.get("pairs") or {}
    if not all(isinstance(value, str) for value in pairs.values()):
        raise KustomizeError(f"{where}: label values must be strings: {pairs}")
    for resource in resources:
        metadata = resource.body["metadata"]
        metadata["labels"] = {**(metadata.get("labels") or {}), **pairs}


def set_replicas(entry, resources, directory):
    unsupported = sorted(set(entry) - {"name", "count"})
    if unsupported or not isinstance(entry.get("count"), int):
        raise KustomizeError(f"{directory}: replicas {entry}: only name and an integer count are supported")
    matched = [resource for resource in resources
               if resource.kind in REPLICATED_KINDS and resource.name == entry["name"]]
    if not matched:
        raise KustomizeError(f"{directory}: replicas: no {'/'.join(sorted(REPLICATED_KINDS))} named {entry['name']}")
    for resource in matched:
        resource.body.setdefault("spec", {})["replicas"] = entry["count"]


def split_image(image):
    """name, tag, digest of [host[:port]/]path[:tag][@digest]."""
    slash = image.find("/")
    start = slash if slash > 0 else 0
    rest = image[start:]
    at, colon = rest.find("@"), rest.find(":")
    if at < 0 and colon < 0:
        return image, "", ""
    if at >= 0 and (colon < 0 or at < colon):
        return image[:start + at], "", image[start + at + 1:]
    if at >= 0:
        return image[:start + colon], image[start + colon + 1:start + at], image[start + at + 1:]
    return image[:start + colon], image[start + colon + 1:], ""


def set_image(entry, resources, directory):
    unsupported = sorted(set(entry) - {"name", "newName", "newTag"})
    if unsupported or not all(isinstance(value, str) for value in entry.values()):
        raise KustomizeError(f"{directory}: images {entry}: only name, newName and newTag (strings) are supported")
    # kustomize's match: the name, then an optional :tag and @digest.
    pattern = re.compile(re.escape(entry["name"]) + r"(:[a-zA-Z0-9_.{}-]*)?(@[a-zA-Z][a-zA-Z0-9]*:[a-zA-Z0-9_.{}-]*)?")

    def update(container):
        image = container.get("image")
        if not isinstance(image, str) or not pattern.fullmatch(image):
            return
        name, tag, digest = split_image(image)
        name = entry.get("newName") or name
        if entry.get("newTag"):
            tag, digest = entry["newTag"], ""
        container["image"] = name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")

    def walk(value):  # kustomize updates every containers/initContainers list, wherever it is
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item)
                if key in ("containers", "initContainers") and isinstance(item, list):
                    for container in item:
                        if isinstance(container, dict):
                            update(container)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for resource in resources:
        if resource.kind != "CustomResourceDefinition":
            walk(resource.body)


# ----------------------------------------------------------------------------------------------
# Patches


def apply_patch(entry, directory, resources):
    where = f"{directory}: patch {entry.get('path') or ''}".rstrip()
    unsupported = sorted(set(entry) - {"target", "patch", "path"})
    if unsupported:
        raise KustomizeError(f"{where}: unsupported field(s): {', '.join(unsupported)}")
    if ("patch" in entry) == ("path" in entry):
        raise KustomizeError(f"{where}: give one of patch and path")
    text = entry["patch"] if "patch" in entry else read_text(directory / entry["path"])
    documents = load_documents(text, where)
    if len(documents) != 1:
        raise KustomizeError(f"{where}: expected one document, found {len(documents)}")
    patch = documents[0]
    target = entry.get("target")
    if isinstance(patch, list):
        if target is None:
            raise KustomizeError(f"{where}: a JSON6902 patch needs a target")
        for resource in select_target(target, resources, where):
            for operation in patch:
                apply_json6902(resource.body, operation, f"{where} on {resource.describe()}")
    elif isinstance(patch, dict):
        if target is None:
            name = (patch.get("metadata") or {}).get("name")
            matched = [resource for resource in resources if resource.kind == patch.get("kind")
                       and resource.body.get("apiVersion") == patch.get("apiVersion") and resource.name == name]
            if len(matched) != 1:
                raise KustomizeError(f"{where}: no single {patch.get('kind')} {name} to patch")
        else:
            matched = select_target(target, resources, where)
        body = {key: value for key, value in patch.items() if key not in ("apiVersion", "kind")}
        metadata = {key: value for key, value in (body.pop("metadata", None) or {}).items()
                    if key not in ("name", "namespace")}
        if metadata:
            body["metadata"] = metadata
        for resource in matched:
            resource.body = strategic_merge(resource.body, body, f"{where} on {resource.describe()}", "")
    else:
        raise KustomizeError(f"{where}: neither a JSON6902 patch (a list) nor a strategic merge patch (a mapping)")


def select_target(target, resources, where):
    """Resources whose kind and name match the target's regexes, anchored at both ends as kustomize does."""
    unsupported = sorted(set(target) - {"kind", "name"})
    if unsupported:
        raise KustomizeError(f"{where}: unsupported target field(s): {', '.join(unsupported)} (kind and name only)")
    try:
        kind = re.compile(f"(?:{target['kind']})") if target.get("kind") else None
        name = re.compile(f"(?:{target['name']})") if target.get("name") else None
    except re.error as error:
        raise KustomizeError(f"{where}: bad target regex: {error}") from None
    return [resource for resource in resources
            if (kind is None or kind.fullmatch(resource.kind)) and (name is None or name.fullmatch(resource.name))]


def apply_json6902(document, operation, where):
    if not isinstance(operation, dict) or operation.get("op") not in ("add", "remove", "replace"):
        raise KustomizeError(f"{where}: unsupported JSON6902 operation {operation!r} (add, remove, replace)")
    op, path = operation["op"], operation.get("path")
    if set(operation) - {"op", "path", "value"} or (op != "remove") != ("value" in operation):
        raise KustomizeError(f"{where}: malformed {op} operation {operation!r}")
    if not isinstance(path, str) or not path.startswith("/"):
        raise KustomizeError(f"{where}: {op}: path {path!r} must start with /")
    tokens = [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]
    parent = document
    for depth, token in enumerate(tokens[:-1]):
        parent = step(parent, token, f"{where}: {op} {path}: {'/'.join(tokens[:depth + 1])} does not exist")
    last = tokens[-1]
    missing = f"{where}: {op} {path}: the document has no such path"
    value = copy.deepcopy(operation.get("value"))
    if isinstance(parent, dict):
        if op != "add" and last not in parent:
            raise KustomizeError(missing)
        if op == "remove":
            del parent[last]
        else:
            parent[last] = value
    elif isinstance(parent, list):
        if op == "add" and last == "-":
            parent.append(value)
            return
        index = list_index(last, missing)
        if index > len(parent) or (op != "add" and index == len(parent)):
            raise KustomizeError(missing)
        if op == "add":
            parent.insert(index, value)
        elif op == "remove":
            del parent[index]
        else:
            parent[index] = value
    else:
        raise KustomizeError(missing)


def step(node, token, message):
    if isinstance(node, dict) and token in node:
        return node[token]
    if isinstance(node, list):
        index = list_index(token, message)
        if index < len(node):
            return node[index]
    raise KustomizeError(message)


def list_index(token, message):
    if not re.fullmatch(r"0|[1-9][0-9]*", token):
        raise KustomizeError(message)
    return int(token)


def strategic_merge(original, patch, where, path):
    """The patch merged into original: mappings recursively (null deletes a field); lists of MERGE_KEYS
    element by element, the patch's elements first, then the original's others; scalar lists replaced."""
    if isinstance(patch, dict):
        directives = sorted(key for key in patch if str(key).startswith("$"))
        if directives:
            raise KustomizeError(f"{where}: unsupported strategic merge directive(s) {directives} at {path or '/'}")
        merged = dict(original) if isinstance(original, dict) else {}
        for key, value in patch.items():
            where_key = f"{path}.{key}" if path else str(key)
            if value is None:
                merged.pop(key, None)
            elif isinstance(value, list):
                merged[key] = merge_list(merged.get(key), value, key, where, where_key)
            else:
                merged[key] = strategic_merge(merged.get(key), value, where, where_key)
        return merged
    return copy.deepcopy(patch)


def merge_list(original, patch, field, where, path):
    if not patch:
        raise KustomizeError(f"{where}: an empty list ({path}) in a strategic merge patch is not supported")
    if all(not isinstance(item, (dict, list)) for item in patch) and \
            all(not isinstance(item, (dict, list)) for item in original or []):
        if field == "finalizers":
            raise KustomizeError(f"{where}: merging the list {path} is not supported")
        return list(patch)
    key = MERGE_KEYS.get(field)
    if key is None or not all(isinstance(item, dict) and key in item for item in patch):
        raise KustomizeError(f"{where}: strategic merge of the list {path} is not supported "
                             f"(only {', '.join(sorted(MERGE_KEYS))} by their key, and lists of scalars)")
    originals = {item.get(key): item for item in original or [] if isinstance(item, dict)}
    merged = [strategic_merge(originals.get(item[key]), item, where, f"{path}[{key}={item[key]}]") for item in patch]
    in_patch = {item[key] for item in patch}
    return merged + [copy.deepcopy(item) for item in original or [] if item.get(key) not in in_patch]


# ----------------------------------------------------------------------------------------------


def to_yaml(documents):
    return "---\n".join(yaml.safe_dump(document, sort_keys=True, allow_unicode=True, default_flow_style=False)
                        for document in documents)


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} DIR", file=sys.stderr)
        return 2
    try:
        documents = render(argv[1])
    except KustomizeError as error:
        print(f"kustomize_render: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(to_yaml(documents))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
