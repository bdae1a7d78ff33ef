# Sourced by the bench scripts: `rocescope_binary PROFILE` sets $bin to the rocescope binary to
# measure: $ROCESCOPE when it is set (another build: an earlier commit's, or the one
# bench/scale.sh passes on to the scripts it runs), else PROFILE's build (release, dist), built
# first. Works from any directory.
rocescope_binary() {
  if [ -n "${ROCESCOPE:-}" ]; then
    bin=$(realpath "$ROCESCOPE")
    return
  fi
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  (cd "$root" && cargo build --profile "$1" --quiet --bin rocescope)
  bin=$(cd "$root" && realpath "${CARGO_TARGET_DIR:-target}/$1/rocescope")
}
