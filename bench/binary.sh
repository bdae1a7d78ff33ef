# Sourced by the bench scripts: `rocescope_binary PROFILE` sets $bin to the rocescope binary to
# measure: $ROCESCOPE when it is set (another build: an earlier commit's, or the one
# bench/scale.sh passes on to the scripts it runs), else PROFILE's build (release, dist), built
# first. `built PROFILE KIND NAME` prints the path of cargo target NAME of KIND (bin, example)
# in PROFILE's build, built first. Both work from any directory.
built() {
  local root dir=$1
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  [ "$2" = example ] && dir=$1/examples
  (cd "$root" && cargo build --profile "$1" --quiet "--$2" "$3")
  (cd "$root" && realpath "${CARGO_TARGET_DIR:-target}/$dir/$3")
}

rocescope_binary() {
  if [ -n "${ROCESCOPE:-}" ]; then
    bin=$(realpath "$ROCESCOPE")
    return
  fi
  bin=$(built "$1" bin rocescope)
}
