#!/usr/bin/env bash
# hack/check-docs.sh: checks README.md and docs/*.md, and exits non-zero naming file and line of each problem.
#
#   1. Every relative Markdown link resolves to a file or folder of the repository, and a `#anchor` into a .md file
#      (or into the same page) names one of its headings, by GitHub's anchor rule (lower case, punctuation but `-`
#      and `_` dropped, spaces to `-`, `-1`, `-2`... for repeated headings).
#   2. Every command the pages show, in fenced code blocks and in inline code, that runs `hack/...` or `cargo ...`
#      names something that exists: a `hack/` path exists (a script directly in hack/ must be executable); for
#      cargo, each `-p`/`--package` is a workspace crate, each `--test NAME` a test target of those crates (of any
#      crate when none is named: `--workspace`), each `--bench`/`--bin` a bench or binary of them.
#
# hack/test.sh runs it first, before the build. No build, no network, no cluster: python3 and the files only.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import glob, os, re, sys

# Pages written on another branch: a link to one of them is accepted while the file is absent (once it exists, it
# is checked like any other page). Empty when every page is here.
ADDED_ELSEWHERE: set = set()

pages = ["README.md"] + sorted(glob.glob("docs/*.md"))
errors = []

def err(path, line, msg):
    errors.append(f"{path}:{line}: {msg}")

# --- the workspace: crates and their targets --------------------------------------------------------------------
def toml_values(text, section, key):
    """Values of `key = "..."` inside every [[section]] table of a Cargo.toml (enough for our manifests)."""
    out, inside = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            inside = line == f"[[{section}]]"
            continue
        m = re.match(rf'{key}\s*=\s*"([^"]+)"', line)
        if inside and m:
            out.append(m.group(1))
    return out

crates = {}  # crate name -> {"dir", "tests", "benches", "bins"}
root = open("Cargo.toml").read()
members = re.findall(r'"([^"]+)"', re.search(r"members\s*=\s*\[(.*?)\]", root, re.S).group(1))
for d in members:
    text = open(os.path.join(d, "Cargo.toml")).read()
    name = re.search(r'^name\s*=\s*"([^"]+)"', text, re.M).group(1)
    def stems(sub):
        found = {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(d, sub, "*.rs"))}
        found |= {os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(d, sub, "*", "main.rs"))}
        return found
    bins = stems("src/bin") | set(toml_values(text, "bin", "name"))
    if os.path.exists(os.path.join(d, "src", "main.rs")):
        bins.add(name)
    crates[name] = {
        "dir": d,
        "tests": stems("tests") | set(toml_values(text, "test", "name")),
        "benches": stems("benches") | set(toml_values(text, "bench", "name")),
        "bins": bins,
    }

# --- Markdown scanning ---------------------------------------------------------------------------------------------
FENCE = re.compile(r"^\s*(```+|~~~+)")

def scan(path):
    """(line number, text, in_code_block) for each line of a page."""
    out, fence = [], None
    for n, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * 3
                out.append((n, line, True))
                continue
            if m.group(1).startswith(fence):
                fence = None
                out.append((n, line, True))
                continue
        out.append((n, line, fence is not None))
    return out

def anchors_of(path):
    seen, result = {}, set()
    for _, line, code in scan(path):
        if code:
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))  # a link in a heading: its text
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        k = seen.get(slug, 0)
        seen[slug] = k + 1
        result.add(slug if k == 0 else f"{slug}-{k}")
    return result

_anchor_cache = {}
def has_anchor(path, anchor):
    if path not in _anchor_cache:
        _anchor_cache[path] = anchors_of(path)
    return anchor in _anchor_cache[path]

INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")

def check_link(page, n, target):
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
        return  # an absolute URL (https:, mailto:, ...)
    path, _, anchor = target.partition("#")
    if path:
        resolved = os.path.normpath(os.path.join(os.path.dirname(page), path))
        if resolved.startswith(".."):
            err(page, n, f"link `{target}` leaves the repository")
            return
        if not os.path.exists(resolved):
            if resolved in ADDED_ELSEWHERE:
                return
            err(page, n, f"link `{target}`: no such file ({resolved})")
            return
    else:
        resolved = page
    if anchor and resolved.endswith(".md") and os.path.isfile(resolved) and not has_anchor(resolved, anchor):
        err(page, n, f"link `{target}`: {resolved} has no heading with the anchor #{anchor}")

# --- commands ----------------------------------------------------------------------------------------------------
HACK = re.compile(r"(?<![\w./$-])hack/[\w./-]*[\w]")
CARGO = re.compile(r"(?<![\w/-])cargo\s+(?:\+\S+\s+)?(test|run|bench|build|clippy|check)\b([^;|&'\"`)]*)")

def placeholder(token):
    return any(c in token for c in "<>$*{}") or token in ("NAME", "N", "...")

def check_hack(page, n, token):
    if placeholder(token):
        return
    if not os.path.exists(token):
        err(page, n, f"`{token}` does not exist")
    elif os.path.dirname(token) == "hack" and token.endswith(".sh") and not os.access(token, os.X_OK):
        err(page, n, f"`{token}` is not executable")

def check_cargo(page, n, sub, rest):
    tokens = rest.split()
    if "--" in tokens:
        tokens = tokens[: tokens.index("--")]  # what follows goes to the test binary
    pkgs, wants = [], []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        value = tokens[i + 1] if i + 1 < len(tokens) else None
        if t in ("-p", "--package") and value:
            pkgs.append(value); i += 2; continue
        if t in ("--test", "--bench", "--bin") and value:
            wants.append((t[2:], value)); i += 2; continue
        if t.startswith("--package="):
            pkgs.append(t.split("=", 1)[1])
        i += 1
    for p in pkgs:
        if not placeholder(p) and p not in crates:
            err(page, n, f"`cargo {sub} -p {p}`: no workspace crate named {p} (crates: {', '.join(sorted(crates))})")
    known = [p for p in pkgs if p in crates] or list(crates)
    for what, name in wants:
        if placeholder(name):
            continue
        field = {"test": "tests", "bench": "benches", "bin": "bins"}[what]
        if not any(name in crates[p][field] for p in known):
            where = ", ".join(pkgs) if pkgs else "any workspace crate"
            err(page, n, f"`cargo {sub} --{what} {name}`: no {what} target {name} in {where}")

def check_commands(page, n, text):
    for m in HACK.finditer(text):
        check_hack(page, n, m.group(0))
    for m in CARGO.finditer(text):
        check_cargo(page, n, m.group(1), m.group(2))

# --- run -----------------------------------------------------------------------------------------------------------
for page in pages:
    for n, line, code in scan(page):
        if code:
            if not FENCE.match(line):
                check_commands(page, n, line)
            continue
        for m in INLINE_CODE.finditer(line):
            check_commands(page, n, m.group(2))
        prose = INLINE_CODE.sub("", line)
        for m in LINK.finditer(prose):
            check_link(page, n, m.group(1))
        m = REF_DEF.match(prose)
        if m:
            check_link(page, n, m.group(1))

if errors:
    print("hack/check-docs.sh: the documentation has problems:", file=sys.stderr)
    for e in errors:
        print("  " + e, file=sys.stderr)
    sys.exit(1)
print(f"hack/check-docs.sh: {len(pages)} pages, links and commands ok", file=sys.stderr)
PY
