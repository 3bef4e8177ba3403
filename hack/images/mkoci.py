#!/usr/bin/env python3
"""Assemble a single-layer OCI image archive without a container engine (see hack/images.sh).

    mkoci.py --name localhost/olm-rs/olm-operator:dev --out olm-operator.oci.tar \
             --file /path/on/host:/usr/local/bin/olm-operator --with-libs /usr/local/bin/olm-operator \
             --dir /tmp --entrypoint /usr/local/bin/olm-operator --user 65532:65532

The layer is reproducible (sorted entries, mtime 0, owner 0:0). `--label KEY=VALUE` (repeated) sets an image label
in the config and the same annotation on the manifest (hack/images.sh passes the org.opencontainers.image.* ones). `--with-libs PATH` adds every shared library
`ldd` lists for the file placed at PATH (and the dynamic loader), at the same paths as on the host. The archive
is an OCI image layout (`oci-layout`, `index.json`, `blobs/sha256/...`) whose index carries the
`io.containerd.image.name` annotation, so `ctr -n k8s.io images import` tags it.
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile


def ldd_paths(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if out.returncode != 0:
        if "not a dynamic executable" in (out.stdout + out.stderr):
            return []
        sys.exit(f"ldd {binary} failed: {out.stderr.strip()}")
    paths = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if "=>" in parts:
            target = parts[parts.index("=>") + 1]
            if target.startswith("/"):
                paths.append(target)
        elif parts and parts[0].startswith("/"):
            paths.append(parts[0])  # the dynamic loader
    return paths


def add_dirs(entries, path):
    parts = path.strip("/").split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = "/".join(parts[:i])
        entries.setdefault(d, ("dir", None, 0o755))


def build_layer(entries, owned=(), owner=(0, 0)):
    """`owned`: image paths (no leading slash) given to `owner` (uid, gid), mode 0575 (see below)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(entries):
            kind, src, mode = entries[name]
            info = tarfile.TarInfo(name)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = mode
            if name in owned:
                # The kernel lets a process reclaim its binary's code pages (runtime/src/code_pages.rs, madvise
                # MADV_PAGEOUT) when it owns the file or may write it. The image's user owns it; group 0 may write
                # it, for a pod run under another UID, which gets group 0 (OpenShift's restricted SCC, or
                # Kubernetes with runAsUser and no runAsGroup). Pods mount the root filesystem read-only, so no
                # write can happen (docs/pod-security.md).
                info.uid, info.gid = owner
                info.mode = 0o575
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind == "link":
                info.type = tarfile.SYMTYPE
                info.linkname = src
                tar.addfile(info)
            else:
                with open(src, "rb") as f:
                    data = f.read()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    diff = raw.getvalue()
    zipped = io.BytesIO()
    with gzip.GzipFile(fileobj=zipped, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(diff)
    return diff, zipped.getvalue()


def blob(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True, help="image reference, e.g. localhost/olm-rs/olm-operator:dev")
    ap.add_argument("--out", required=True)
    ap.add_argument("--file", action="append", default=[], help="HOST:IMAGE_PATH (mode kept)")
    ap.add_argument("--tree", action="append", default=[], help="HOST_DIR:IMAGE_DIR, copied recursively")
    ap.add_argument("--with-libs", action="append", default=[], help="IMAGE_PATH of a file whose ldd libraries to add")
    ap.add_argument("--symlink", action="append", default=[], help="LINK:TARGET")
    ap.add_argument("--dir", action="append", default=[], help="an empty directory (mode 1777 for /tmp)")
    ap.add_argument("--entrypoint", action="append", default=[])
    ap.add_argument("--cmd", action="append", default=[])
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--user", default="")
    ap.add_argument("--owned", action="append", default=[],
                    help="IMAGE_PATH of a file owned by --user's uid and group 0, mode 0575")
    ap.add_argument("--port", action="append", default=[])
    ap.add_argument("--label", action="append", default=[],
                    help="KEY=VALUE: an image label (config Labels) and manifest annotation, e.g. org.opencontainers.image.version")
    args = ap.parse_args()

    entries = {}
    placed = {}
    for spec in args.file:
        host, image = spec.split(":", 1)
        name = image.strip("/")
        add_dirs(entries, name)
        entries[name] = ("file", host, os.stat(host).st_mode & 0o7777)
        placed[image] = host
    for spec in args.tree:
        host, image = spec.split(":", 1)
        for root, dirs, files in os.walk(host):
            rel = os.path.relpath(root, host)
            base = image.strip("/") if rel == "." else image.strip("/") + "/" + rel
            add_dirs(entries, base + "/x")
            entries.setdefault(base, ("dir", None, 0o755))
            for f in files:
                entries[base + "/" + f] = ("file", os.path.join(root, f), 0o644)
    for image in args.with_libs:
        for lib in ldd_paths(placed[image]):
            real = os.path.realpath(lib)
            name = lib.strip("/")
            add_dirs(entries, name)
            entries[name] = ("file", real, 0o755)
    for spec in args.symlink:
        link, target = spec.split(":", 1)
        add_dirs(entries, link.strip("/"))
        entries[link.strip("/")] = ("link", target, 0o777)
    for d in args.dir:
        add_dirs(entries, d.strip("/") + "/x")
        entries[d.strip("/")] = ("dir", None, 0o1777 if d.strip("/") == "tmp" else 0o755)

    labels = dict(spec.split("=", 1) for spec in args.label)
    owner = (0, 0)
    if args.owned:
        uid = args.user.partition(":")[0]
        owner = (int(uid), 0)
    diff, layer = build_layer(entries, {o.strip("/") for o in args.owned}, owner)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Entrypoint": args.entrypoint or None,
            "Cmd": args.cmd or None,
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin"] + args.env,
            "User": args.user,
            "WorkingDir": "/",
            "ExposedPorts": {f"{p}/tcp": {} for p in args.port} or None,
            "Labels": labels or None,
        },
        "rootfs": {"type": "layers", "diff_ids": [blob(diff)]},
        "history": [{"created_by": "olm-rs hack/images/mkoci.py"}],
    }
    config["config"] = {k: v for k, v in config["config"].items() if v not in (None, "")}
    config_bytes = json.dumps(config, sort_keys=True).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": blob(config_bytes), "size": len(config_bytes)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": blob(layer), "size": len(layer)}],
    }
    if labels:
        manifest["annotations"] = labels
    manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": blob(manifest_bytes),
            "size": len(manifest_bytes),
            "annotations": {
                "io.containerd.image.name": args.name,
                "org.opencontainers.image.ref.name": args.name.rsplit(":", 1)[-1],
            },
        }],
    }
    files = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": json.dumps(index, sort_keys=True).encode(),
    }
    for data in (config_bytes, manifest_bytes, layer):
        files["blobs/sha256/" + blob(data).split(":", 1)[1]] = data
    tmp = args.out + ".tmp"
    with tarfile.open(tmp, "w") as tar:
        for d in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))
    os.replace(tmp, args.out)
    print(f"{args.name}\t{args.out}\tlayer {len(layer)} bytes (gzip), {len(diff)} bytes unpacked")


if __name__ == "__main__":
    main()
