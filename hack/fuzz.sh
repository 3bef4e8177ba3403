#!/usr/bin/env bash
# hack/fuzz.sh [SECONDS] [TARGET...]: run each cargo-fuzz target of fuzz/ for SECONDS (default 60) and print, per
# target, the executions, the coverage and the crashes. A bench, not a test: hack/test.sh does not run it.
#
# Corpora live outside the clone, in $OLM_RS_FUZZ_DIR (default ~/.cache/olm-rs/fuzz): corpus/<target> is seeded
# from the shared catalogs (../shared/catalogs beside the clone, or $OLM_RS_SHARED/catalogs) by hack/fuzz-seeds.py
# and keeps what each run adds; a crash is written to artifacts/<target>/ and named in the summary (reproduce it
# with `cargo +nightly fuzz run TARGET FILE` in fuzz/, then make it a table case of the owning crate's tests).
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`); builds go to
# $OLM_RS_FUZZ_DIR/target. Exits 1 when a target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-60}"
shift || true
cache="${OLM_RS_FUZZ_DIR:-$HOME/.cache/olm-rs/fuzz}"
shared="${OLM_RS_SHARED:-$(cd .. && pwd)/shared}/catalogs"
all=(fbc package_manifest csv_decode semver_range oci_manifest layer_unpack sqlite_index)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
log() { echo "== fuzz: $*" >&2; }

command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz is required: cargo install cargo-fuzz --locked" >&2; exit 1; }
rustup toolchain list | grep -q '^nightly' || { echo "the nightly toolchain is required: rustup toolchain install nightly" >&2; exit 1; }
[ -d "$shared" ] || { echo "the shared catalogs are missing: $shared (set OLM_RS_SHARED)" >&2; exit 1; }

log "seeding $cache/corpus from $shared"
python3 hack/fuzz-seeds.py "$shared" "$cache/corpus" >&2

# Release code with debug assertions (-a: overflow checks). No sanitizer by default: the code fuzzed is safe Rust
# (the workspace denies unsafe code), whose failures are panics, overflows, hangs and memory blow-ups, which
# libFuzzer catches without one; OLM_RS_FUZZ_SANITIZER=address (cargo-fuzz's default) for AddressSanitizer.
sanitizer="${OLM_RS_FUZZ_SANITIZER:-none}"
fuzz() { (cd fuzz && cargo +nightly fuzz "$1" -O -a -s "$sanitizer" --target-dir "$cache/target" "${@:2}"); }
log "building the targets"
fuzz build >&2

# The largest input of each target: whole catalogs and layers, where the others stay small.
max_len() {
  case "$1" in
    sqlite_index) echo 262144 ;;
    fbc | csv_decode | layer_unpack | package_manifest) echo 131072 ;;
    *) echo 16384 ;;
  esac
}

summary=()
crashed=0
for t in "${targets[@]}"; do
  mkdir -p "$cache/corpus/$t" "$cache/artifacts/$t"
  log "$t for ${duration}s"
  out="$cache/$t.log"
  status=0
  fuzz run "$t" "$cache/corpus/$t" -- \
    -max_total_time="$duration" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$cache/artifacts/$t/" -print_final_stats=1 >"$out" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$out" | tail -1)
  found=$(find "$cache/artifacts/$t" -type f | wc -l)
  if [ "$status" -ne 0 ] || [ "$found" -gt 0 ]; then crashed=1; fi
  summary+=("$(printf '%-17s execs %-9s /s %-6s %-32s crashes %s (exit %s)' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$found" "$status")")
  [ "$status" -eq 0 ] || tail -40 "$out" >&2
done

log "summary (${duration}s each; logs in $cache/<target>.log)"
printf '%s\n' "${summary[@]}"
[ "$crashed" -eq 0 ] || { log "crashes in $cache/artifacts"; exit 1; }
