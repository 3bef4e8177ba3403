#!/usr/bin/env python3
"""Delete the stale executables of a cargo target folder's debug/deps: for each target name (the part before the
16-hex-digit hash), every build but the newest, when older than an hour. Each build of a changed crate leaves a new
test binary beside the old ones (hundreds of MB each); without this the cache grows by gigabytes a day.

    prune-target.py TARGET_DIR      prints what it freed
"""
import collections
import os
import re
import sys
import time

deps = os.path.join(sys.argv[1], "debug", "deps")
if not os.path.isdir(deps):
    sys.exit(0)
builds = collections.defaultdict(list)
for name in os.listdir(deps):
    m = re.fullmatch(r"(.+)-([0-9a-f]{16})", name)
    path = os.path.join(deps, name)
    if m and os.path.isfile(path) and os.access(path, os.X_OK):
        st = os.stat(path)
        builds[m.group(1)].append((st.st_mtime, path, st.st_size))
freed = count = 0
now = time.time()
for versions in builds.values():
    versions.sort()
    for mtime, path, size in versions[:-1]:
        if now - mtime > 3600:
            os.remove(path)
            freed += size
            count += 1
print(f"prune-target: {count} stale test binaries, {freed / 2**30:.1f} GiB freed")
