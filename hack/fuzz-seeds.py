#!/usr/bin/env python3
"""hack/fuzz-seeds.py CATALOGS OUT: the seed corpora of the fuzz targets (fuzz/), from the shared catalogs.

Writes OUT/<target>/<sha1 of the seed> (idempotent: a seed already there is left alone), each seed at most
MAX bytes:

  fbc               file-based catalog files (whole, or the package and channels with a few bundles)
  package_manifest  each package-manifest folder as a ConfigMap catalog: packages, CSVs, CRDs (NUL-separated)
  csv_decode        every ClusterServiceVersion manifest, and the CRDs of at most 16 KiB
  semver_range      every skipRange (olm.skipRange) with the versions the same file names
  oci_manifest      an image manifest, an image index, a Docker manifest list and an image config per bundle
  layer_unpack      each bundle folder as a gzip'd tar layer (and small ones as plain tar)
  sqlite_index      operator-registry sqlite indexes of small file-based catalogs (PyYAML), and one built in

Only the standard library is needed; PyYAML, when present, adds the sqlite indexes built from the catalogs.
"""
import hashlib, io, json, os, re, sqlite3, sys, tarfile, tempfile

MAX = 128 << 10
catalogs, out = sys.argv[1], sys.argv[2]
counts = {}


def seed(target, data):
    if isinstance(data, str):
        data = data.encode()
    if not data or len(data) > MAX:
        return
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, hashlib.sha1(data).hexdigest())
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)
    counts[target] = counts.get(target, 0) + 1


def files(root, suffixes=(".yaml", ".yml", ".json")):
    for base, _, names in os.walk(root):
        for n in sorted(names):
            if n.endswith(suffixes):
                yield os.path.join(base, n)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def yaml_docs(text):
    return [d.strip("\n") for d in re.split(r"^---\s*$", text, flags=re.M) if d.strip()]


def as_list(docs):
    """YAML documents as one YAML block sequence (each document indented under `- `)."""
    out = []
    for d in docs:
        lines = [l for l in d.splitlines() if not l.startswith("#")]
        if not lines:
            continue
        out.append("- " + lines[0] + "".join("\n  " + l for l in lines[1:]))
    return "\n".join(out) + "\n"


# fbc ----------------------------------------------------------------------------------------------------------
fbc_files = []
for path in files(catalogs):
    text = read(path)
    if re.search(r"""^schema: *olm\.|"schema": *"olm\.""", text, re.M):
        fbc_files.append(path)
        if len(text) <= MAX:
            seed("fbc", text)
        else:
            docs = yaml_docs(text)
            head = [d for d in docs if "schema: olm.bundle" not in d]
            bundles = [d for d in docs if "schema: olm.bundle" in d]
            seed("fbc", "\n---\n".join(head + bundles[:2]))
            for d in bundles[:5]:
                seed("fbc", d)

# package_manifest -----------------------------------------------------------------------------------------------
for base, _, names in os.walk(catalogs):
    packages = [n for n in names if n.endswith(".package.yaml") or n == "package.yaml"]
    if not packages:
        continue
    csvs, crds = [], []
    for path in files(base):
        text = read(path)
        for d in yaml_docs(text):
            if re.search(r"^kind: *ClusterServiceVersion", d, re.M):
                csvs.append(d)
            elif re.search(r"^kind: *CustomResourceDefinition", d, re.M):
                crds.append(d)
    pkg = [d for p in packages for d in yaml_docs(read(os.path.join(base, p)))]
    seed("package_manifest", as_list(pkg) + "\0" + as_list(csvs) + "\0" + as_list(crds))
    seed("package_manifest", as_list(pkg) + "\0" + as_list(csvs[:1]) + "\0")

# csv_decode, semver_range --------------------------------------------------------------------------------------
VERSION = re.compile(r"\b\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?\b")
RANGE = re.compile(r"""(?:skipRange|olm\.skipRange)"?\s*:\s*['"]?([^'"\n]+)""")
for path in files(catalogs):
    text = read(path)
    if re.search(r"^kind: *ClusterServiceVersion", text, re.M) or (
            len(text) <= 16 << 10 and re.search(r"^kind: *CustomResourceDefinition", text, re.M)):
        seed("csv_decode", text)
    versions = " ".join(sorted(set(VERSION.findall(text)))[:32])
    for r in sorted(set(m.strip() for m in RANGE.findall(text))):
        seed("semver_range", r + "\n" + versions)

# layer_unpack, oci_manifest -----------------------------------------------------------------------------------
def bundle_dirs(root):
    for base, dirs, _ in os.walk(root):
        if "manifests" in dirs and "metadata" in dirs:
            yield base


def layer(bundle, gzip):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gzip else "w") as tar:
        for sub in ("manifests", "metadata"):
            for base, _, names in os.walk(os.path.join(bundle, sub)):
                for n in sorted(names):
                    path = os.path.join(base, n)
                    tar.add(path, arcname=os.path.relpath(path, bundle))
    return buf.getvalue()


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def labels(bundle):
    path = os.path.join(bundle, "metadata", "annotations.yaml")
    if not os.path.exists(path):
        return {}
    return dict(re.findall(r"^\s+([\w./-]+):\s*['\"]?([^'\"\n]*)", read(path), re.M))


for i, bundle in enumerate(sorted(bundle_dirs(catalogs))):
    gz = layer(bundle, True)
    seed("layer_unpack", gz)
    if i % 10 == 0:
        seed("layer_unpack", layer(bundle, False))
    if i % 5:
        continue
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Labels": labels(bundle)},
                         "rootfs": {"type": "layers", "diff_ids": [sha256(gz)]}}).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha256(config),
                   "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": sha256(gz),
                    "size": len(gz)}],
        "annotations": {"org.opencontainers.image.title": os.path.basename(bundle)},
    }).encode()
    entries = [{"digest": sha256(manifest), "size": len(manifest), "platform": p} for p in (
        {"os": "linux", "architecture": "amd64"}, {"os": "linux", "architecture": "arm64", "variant": "v8"})]
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [dict(e, mediaType="application/vnd.oci.image.manifest.v1+json") for e in entries]}
    listed = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
              "manifests": [dict(e, mediaType="application/vnd.docker.distribution.manifest.v2+json")
                            for e in entries]}
    for doc in (config, manifest, json.dumps(index), json.dumps(listed)):
        seed("oci_manifest", doc)

# sqlite_index --------------------------------------------------------------------------------------------------
SCHEMA = """
CREATE TABLE package (name TEXT PRIMARY KEY, default_channel TEXT);
CREATE TABLE channel (name TEXT, package_name TEXT, head_operatorbundle_name TEXT, PRIMARY KEY(name, package_name));
CREATE TABLE operatorbundle (name TEXT PRIMARY KEY, csv TEXT, bundle TEXT, bundlepath TEXT, skiprange TEXT,
  version TEXT, replaces TEXT, skips TEXT, substitutesfor TEXT);
CREATE TABLE channel_entry (entry_id INTEGER PRIMARY KEY, channel_name TEXT, package_name TEXT,
  operatorbundle_name TEXT, replaces INTEGER, depth INTEGER);
CREATE TABLE properties (type TEXT, value TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT,
  operatorbundle_path TEXT);
"""


def index_db(docs):
    """An operator-registry index of FBC documents (packages, channels, bundles and their properties)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "index.db")
        db = sqlite3.connect(path)
        db.executescript(SCHEMA)
        bundles = {d.get("name"): d for d in docs if d.get("schema") == "olm.bundle"}
        n = 0
        for d in docs:
            if d.get("schema") == "olm.package":
                db.execute("INSERT OR IGNORE INTO package VALUES (?, ?)", (d.get("name"), d.get("defaultChannel")))
            if d.get("schema") != "olm.channel":
                continue
            entries = d.get("entries") or []
            if entries:
                db.execute("INSERT OR IGNORE INTO channel VALUES (?, ?, ?)",
                           (d.get("name"), d.get("package"), entries[-1].get("name")))
            for e in entries:
                n += 1
                db.execute("INSERT INTO channel_entry VALUES (?, ?, ?, ?, NULL, 0)",
                           (n, d.get("name"), d.get("package"), e.get("name")))
                b = bundles.get(e.get("name"), {})
                version = next((p.get("value", {}).get("version") for p in b.get("properties") or []
                                if p.get("type") == "olm.package"), "")
                db.execute("INSERT OR IGNORE INTO operatorbundle VALUES (?, '', '', ?, ?, ?, ?, ?, NULL)",
                           (e.get("name"), b.get("image", ""), e.get("skipRange", ""), version,
                            e.get("replaces", ""), ",".join(e.get("skips") or [])))
        for name, b in bundles.items():
            for p in b.get("properties") or []:
                if p.get("type") in ("olm.package", "olm.gvk", "olm.package.required", "olm.gvk.required"):
                    db.execute("INSERT INTO properties VALUES (?, ?, ?, '', ?)",
                               (p.get("type"), json.dumps(p.get("value")), name, b.get("image", "")))
        db.commit()
        db.close()
        with open(path, "rb") as f:
            return f.read()


seed("sqlite_index", index_db([
    {"schema": "olm.package", "name": "etcd", "defaultChannel": "alpha"},
    {"schema": "olm.channel", "package": "etcd", "name": "alpha", "entries": [
        {"name": "etcdoperator.v0.9.0"},
        {"name": "etcdoperator.v0.9.2", "replaces": "etcdoperator.v0.9.0", "skipRange": "<0.9.2"}]},
    {"schema": "olm.bundle", "name": "etcdoperator.v0.9.0", "package": "etcd", "image": "quay.io/e/b:0.9.0",
     "properties": [{"type": "olm.package", "value": {"packageName": "etcd", "version": "0.9.0"}}]},
    {"schema": "olm.bundle", "name": "etcdoperator.v0.9.2", "package": "etcd", "image": "quay.io/e/b:0.9.2",
     "properties": [{"type": "olm.package", "value": {"packageName": "etcd", "version": "0.9.2"}},
                    {"type": "olm.gvk", "value": {"group": "etcd.database.coreos.com", "kind": "EtcdCluster",
                                                  "version": "v1beta2"}}]},
]))
try:
    import yaml
except ImportError:
    yaml = None
if yaml is not None:
    for path in sorted(fbc_files, key=os.path.getsize)[:12]:
        try:
            docs = [d for d in yaml.safe_load_all(read(path)) if isinstance(d, dict)]
        except yaml.YAMLError:
            continue
        seed("sqlite_index", index_db(docs))

for target in sorted(counts):
    print(f"{target}: {counts[target]} seeds")
