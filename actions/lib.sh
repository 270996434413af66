# shellcheck shell=bash
# Sourced by the run steps of the wheelgate actions (GitHub runs them with bash -e -o pipefail).
# The inputs reach the steps as environment variables, never as text in the scripts.

if ! command -v wheelgate >/dev/null; then
  echo "::error::wheelgate is not on PATH: run the wheelgate setup action (actions/setup) first"
  exit 2
fi

# option FLAG VALUE: append FLAG VALUE to the array `args` unless VALUE is empty; an empty
# input leaves the command's own default (its WHEELGATE_* variable, boto3's endpoint).
option() {
  if [[ -n "$2" ]]; then
    args+=("$1" "$2")
  fi
}

# lines TEXT: the lines of a multi-line input, without surrounding blanks, blank lines left out.
lines() {
  local line
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line#"${line%%[![:space:]]*}"}"
    line="${line%"${line##*[![:space:]]}"}"
    if [[ -n "$line" ]]; then
      printf '%s\n' "$line"
    fi
  done <<<"$1"
}

# glob_lines TEXT: set the array `paths` to what the glob patterns of a multi-line input match;
# a pattern that matches nothing stops the step (exit 2), naming it.
glob_lines() {
  local pattern path matched
  paths=()
  while IFS= read -r pattern; do
    matched=0
    while IFS= read -r path; do
      paths+=("$path")
      matched=1
    done < <(compgen -G "$pattern" || true)
    if ((!matched)); then
      echo "::error::no file matches $pattern"
      exit 2
    fi
  done < <(lines "$1")
}

# set_output NAME VALUE: a step output of any number of lines, between delimiters that no
# value can contain by chance or by design.
set_output() {
  local delimiter
  delimiter="wheelgate-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  printf '%s<<%s\n%s\n%s\n' "$1" "$delimiter" "$2" "$delimiter" >>"$GITHUB_OUTPUT"
}
