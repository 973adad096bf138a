#!/usr/bin/env bash
# tools/check-fresh.sh — `make check-fresh`: the README's commands on a clean Debian 12, where
# nothing this machine has installed can hide a missing install step.
#
# A minimal Debian 12 root (debootstrap --variant=minbase) is made under build/fresh/root; into it
# go the checkout (its tracked and untracked-but-not-ignored files, as a clone would have them plus
# the work in progress), ../shared (the test data, beside the checkout as the README says), and
# the one prerequisite the README names that Debian 12 lacks: Node.js 20 or later (the host's
# node and npm are copied; Debian 12's own nodejs is 18). Everything else must come from
# tools/setup.sh. Inside the root (chroot, with /proc, /dev, /dev/shm), as a newcomer would:
#   setup        tools/setup.sh
#   build        make all                 (native, plain and relaxed wasm builds)
#   npm          npm ci                   (through make's build/.npm-stamp)
#   native test  build/native/test_kernels (the SIMD kernels through SIMDe against the scalar ones)
#   wasm test    the wasm engine's greedy stories260K text (tests/engine.test.mjs)
#   relaxed      the relaxed-SIMD build's kernel test (node --experimental-wasm-relaxed-simd)
#   llama.cpp    a synth file against llama.cpp's logits (tests/llamacpp.test.mjs, node-llama-cpp)
#   page         the page in Chromium (tests/page.test.mjs: loads the default model, streams)
#   firefox      the page in Firefox ESR, webkit: in WebKitGTK (tests/firefox.test.mjs, webkit.test.mjs)
#   asan         test_sampler built with ASan + UBSan, run
#   fuzz         fuzz_tokenizer for 10 s (make fuzz)
#   serve        make serve, and the page it serves generating in Chromium (tools/fresh-serve-check.mjs)
# Each step's time is printed at the end (and written to build/fresh/times.txt).
#
# Needs root (debootstrap, chroot, mounts). Downloads come from Debian's mirror (FRESH_MIRROR,
# default deb.debian.org) and the npm registry. On the same machine, the minbase tarball and the
# downloaded .deb files are kept in build/fresh/cache and reused (FRESH_CACHE=0: none); installed
# state never is: the root is made anew every run. FRESH_REV=<commit> checks that commit's tree
# instead of the working tree (to see an old setup.sh fail: FRESH_REV=2d633ac).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
shared=$(cd "${WICK_SHARED:-../shared}" && pwd)
fresh=$repo/build/fresh
root=$fresh/root
cache=$fresh/cache
mirror=${FRESH_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
jobs=$(nproc)

[ "$(id -u)" = 0 ] || { echo "check-fresh: needs root (debootstrap, chroot and mounts)" >&2; exit 1; }
node_bin=$(readlink -f "$(command -v node)")
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")   # …/lib/node_modules/npm
[ -f "$npm_dir/package.json" ] || { echo "check-fresh: cannot find npm's folder beside $(command -v npm)" >&2; exit 1; }

declare -a step_names=() step_secs=()
timed() {  # timed NAME COMMAND…: runs it, records its wall time, stops the check on failure
  local name=$1 t0=$SECONDS; shift
  echo "check-fresh: == $name"
  if "$@"; then step_names+=("$name"); step_secs+=($((SECONDS - t0)))
  else echo "check-fresh: step '$name' FAILED after $((SECONDS - t0)) s" >&2; report; exit 1; fi
}
report() {
  { echo "check-fresh steps (wall seconds), $(date -u '+%F %T UTC'), nproc $jobs:"
    for i in "${!step_names[@]}"; do printf '  %-12s %5d\n' "${step_names[$i]}" "${step_secs[$i]}"; done
    printf '  %-12s %5d\n' total "$SECONDS"; } | tee "$fresh/times.txt"
}

mounted=()
unmount_all() {
  [ -n "${serve_pid:-}" ] && kill "$serve_pid" 2>/dev/null || true
  # anything still running inside the root (the server, a browser) holds its mounts
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null || true
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R -l "${mounted[$i]}" 2>/dev/null || true; done
  mounted=()
}
trap unmount_all EXIT
mount_in() {  # mount_in TARGET MOUNT-ARGS…
  mkdir -p "$1"; mount "${@:2}" "$1"; mounted+=("$1")
}

make_root() {
  [ -x /usr/sbin/debootstrap ] || { echo "check-fresh: debootstrap is missing: run tools/setup.sh (make check-fresh does)" >&2; return 1; }
  unmount_all
  # a root left by an interrupted run may still have mounts: never delete through one
  if grep -q " $root/" /proc/mounts; then echo "check-fresh: $root still has mounts; unmount them first" >&2; return 1; fi
  rm -rf "$root"
  mkdir -p "$root" "$cache/debs"
  local tarball=$cache/$suite-minbase.tgz
  if [ "${FRESH_CACHE:-1}" = 0 ] || [ ! -s "$tarball" ]; then
    rm -f "$tarball"
    debootstrap --variant=minbase --make-tarball="$tarball.part" "$suite" "$fresh/tarball-work" "$mirror" >/dev/null
    mv "$tarball.part" "$tarball"; rm -rf "$fresh/tarball-work"
  fi
  debootstrap --variant=minbase --unpack-tarball="$tarball" "$suite" "$root" "$mirror" >/dev/null
  # a Debian 12 system's usual sources: the release, its updates and its security archive
  cat > "$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb ${mirror%/debian}/debian-security $suite-security main
EOF
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # this machine's network setting for Node (a proxy's certificate authority, as on a company
  # network) goes with Node: npm reaches its registry through it
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -s "$NODE_EXTRA_CA_CERTS" ]; then cp "$NODE_EXTRA_CA_CERTS" "$root/etc/node-extra-ca.pem"; fi
  # the documented prerequisite: Node.js 20+ with its npm
  install -D -m 755 "$node_bin" "$root/usr/local/bin/node"
  mkdir -p "$root/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  # the checkout, and the test data beside it
  mkdir -p "$root/work/wick" "$root/work/shared"
  if [ -n "${FRESH_REV:-}" ]; then
    git archive "$FRESH_REV" | tar -x -C "$root/work/wick"
  else
    git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
      | tar -c --null -T - -f - | tar -x -C "$root/work/wick"
  fi
  cp -a "$shared/." "$root/work/shared/"
}

enter_root() {
  mount_in "$root/proc" -t proc proc
  mount_in "$root/sys" -t sysfs sysfs
  mount_in "$root/dev" --rbind /dev
  mount --make-rslave "$root/dev"
  mount_in "$root/dev/shm" -t tmpfs -o size=4g tmpfs
  mount_in "$root/tmp" -t tmpfs -o size=8g tmpfs
  [ "${FRESH_CACHE:-1}" = 0 ] || mount_in "$root/var/cache/apt/archives" --bind "$cache/debs"
}

# run_in COMMAND: a login-like shell in the checkout inside the root, with nothing of the host's environment
run_in() {
  local ca=()
  [ -f "$root/etc/node-extra-ca.pem" ] && ca=(NODE_EXTRA_CA_CERTS=/etc/node-extra-ca.pem)
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    "${ca[@]}" MAKEFLAGS="-j$jobs" /bin/bash -c "cd /work/wick && $1"
}

serve_check() {
  local port=18080 log=$fresh/serve.log
  run_in "make serve PORT=$port" > "$log" 2>&1 &
  serve_pid=$!
  local waited=0
  until grep -q "127.0.0.1:$port" "$log" 2>/dev/null; do
    sleep 1; waited=$((waited + 1))
    if ! kill -0 "$serve_pid" 2>/dev/null || [ $waited -gt 600 ]; then tail -n 30 "$log"; echo "check-fresh: make serve did not start serving" >&2; return 1; fi
  done
  run_in "node tools/fresh-serve-check.mjs http://127.0.0.1:$port/"
}

# node_tests FILE [PATTERN]: runs a suite (the tests whose names match PATTERN), prints what passed,
# and fails when a test fails or none ran (a pattern that no longer matches must not pass unseen)
node_tests() {
  local log=$fresh/$(basename "$1" .test.mjs).tap
  run_in "node --test --test-reporter=tap ${2:+--test-name-pattern='$2'} $1" > "$log" 2>&1 || { tail -n 60 "$log"; return 1; }
  local ran
  ran=$(grep -E '^ *ok [0-9]+ - ' "$log" | grep -v '# SKIP' | sed -E 's/^ *ok [0-9]+ - /  passed: /')
  [ -n "$ran" ] || { echo "check-fresh: no test of $1 ran${2:+ (pattern '$2')}" >&2; return 1; }
  echo "$ran"
}
timed debootstrap make_root
enter_root
timed setup     run_in "bash tools/setup.sh"
timed build     run_in "make all"
timed npm       run_in "make build/.npm-stamp"
timed native    run_in "set -o pipefail; build/native/test_kernels | grep -E '^(FAIL|summary)'"
timed wasm      node_tests tests/engine.test.mjs '^wasm: greedy stories260K.gguf' 
timed relaxed   run_in "set -o pipefail; node --experimental-wasm-relaxed-simd build/wasm/test_kernels-relaxed.js | grep -E '^(FAIL|summary)'"
timed llama.cpp node_tests tests/llamacpp.test.mjs 'synth mini q4_k_m' 
timed page      node_tests tests/page.test.mjs 'loads the default model' 
for engine in firefox webkit; do
  [ -f "tests/$engine.test.mjs" ] && timed "$engine" node_tests "tests/$engine.test.mjs"
done
timed asan      run_in "set -o pipefail; make build/asan/test_sampler && build/asan/test_sampler | grep -E '^(FAIL|summary)'"
timed fuzz      run_in "make fuzz FUZZ_SECONDS=10 FUZZ_TARGETS=fuzz_tokenizer"
timed serve     serve_check
report
echo "check-fresh: passed"
