# shellcheck shell=bash
# Sourced by the run steps of the wheelgate actions (GitHub runs them with bash -e -o pipefail).
# The inputs reach the steps as environment variables, never as text in the scripts.
#
# Every action runs the wheelgate command of its own commit, installed from the action's own
# checkout (the WheelGate repository at the ref in `uses:`) by the first step of a job that
# needs it, into a venv under RUNNER_TEMP that the job's later steps reuse. RUNNER_TEMP is
# emptied before every job, so a job never runs what another job installed.

# The WheelGate checkout this action came from; the runner downloads one per repository and
# ref, once per job.
wheelgate_source=$(cd "$GITHUB_ACTION_PATH/../.." && pwd -P)
# Its install, keyed by the checkout (so by its ref): actions of two refs in one job each run
# their own commit. cksum is on every runner (POSIX), unlike sha256sum.
wheelgate_home="$RUNNER_TEMP/wheelgate-$(printf '%s' "$wheelgate_source" | cksum | cut -d ' ' -f 1)"
wheelgate_venv="$wheelgate_home/venv"
# Written last by an install that finished (the command's --version), so a step that died
# half-way through an install leaves none that a later step would trust.
wheelgate_installed="$wheelgate_home/installed"

# error MESSAGE: an error annotation, escaped as workflow commands require.
error() {
  local message=${1//'%'/%25}
  message=${message//$'\r'/%0D}
  message=${message//$'\n'/%0A}
  printf '::error::%s\n' "$message"
}

# without_credentials: unset what would let the code an install runs (a build backend from the
# package index) act as the job: an assumed role's keys, the OIDC token request, tokens.
without_credentials() {
  local name
  while IFS= read -r name; do
    case "$name" in
      AWS_* | ACTIONS_ID_TOKEN_REQUEST_* | ACTIONS_RUNTIME_* | GITHUB_TOKEN | GH_TOKEN) unset "$name" ;;
    esac
  done < <(compgen -e)
}

# install_wheelgate PYTHON: (re)install the command from this checkout in a venv of PYTHON
# (3.11+): the base install, its dependencies constrained to the versions requirements.txt
# pins at this commit, with uv when it is on PATH (faster), else pip.
install_wheelgate() {
  local interpreter=$1 found
  if found=$(command -v "$interpreter"); then
    if ! "$found" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      error "wheelgate needs Python 3.11 or newer, and $interpreter is $("$found" -V 2>&1): set up a newer one first (actions/setup-python), or give the wheelgate setup action its path (input python)"
      exit 2
    fi
  elif ! command -v uv >/dev/null; then
    error "wheelgate needs Python 3.11 or newer, and there is no $interpreter on PATH: set one up first (actions/setup-python), or give the wheelgate setup action its path (input python)"
    exit 2
  fi
  rm -rf "$wheelgate_home"
  mkdir -p "$wheelgate_home/bin"
  # A constraint names no extras: requirements.txt's are stripped.
  sed -E 's/\[[^]]*\]//' "$wheelgate_source/requirements.txt" >"$wheelgate_home/constraints.txt"
  # Each command is chained: errexit does not apply inside a tested subshell.
  if ! (
    without_credentials
    if command -v uv >/dev/null; then
      uv venv --quiet --python "$interpreter" "$wheelgate_venv" &&
        uv pip install --quiet --python "$wheelgate_venv/bin/python" \
          --constraint "$wheelgate_home/constraints.txt" "$wheelgate_source"
    else
      "$interpreter" -m venv "$wheelgate_venv" &&
        "$wheelgate_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
          --constraint "$wheelgate_home/constraints.txt" "$wheelgate_source"
    fi
  ); then
    error "could not install wheelgate from $wheelgate_source (the installer's output is above)"
    exit 1
  fi
  ln -s "$wheelgate_venv/bin/wheelgate" "$wheelgate_home/bin/wheelgate"
  "$wheelgate_venv/bin/wheelgate" --version >"$wheelgate_installed.partial"
  mv "$wheelgate_installed.partial" "$wheelgate_installed"
  echo "installed $(<"$wheelgate_installed") in $wheelgate_venv"
}

# wheelgate_ready: install the command on its first use in the job; later steps reuse it.
wheelgate_ready() {
  if [[ -f "$wheelgate_installed" ]]; then
    echo "$(<"$wheelgate_installed"), installed earlier in this job in $wheelgate_venv"
  else
    echo "installing wheelgate from $wheelgate_source (its first use in this job)"
    install_wheelgate python3
  fi
}

# run_wheelgate ARG...: run the command. Sets `output` (what it printed), `code` (its exit
# code) and `last_line` (the last line it wrote to stderr: the one line an error ends with);
# its stderr shows in the log as it comes.
run_wheelgate() {
  local errors="$wheelgate_home/stderr"
  code=0
  # stdout to the capture (fd 3), stderr through tee to the log and the file.
  output=$({ "$wheelgate_venv/bin/wheelgate" "$@" 2>&1 1>&3 3>&- | tee "$errors" >&2; } 3>&1) ||
    code=$?
  last_line=$(awk 'NF { line = $0 } END { print line }' "$errors")
}

# stop_unless_ok: end the step unless the command succeeded, with the command's exit code and
# its own last line as the error annotation (2 bad input, 4 storage error: the line names the
# operation, bucket, endpoint and error).
stop_unless_ok() {
  if ((code != 0)); then
    error "${last_line:-wheelgate ended with exit code $code}"
    exit "$code"
  fi
}

# json_value PATH...: the value in the command's JSON `output` at the first of the dotted
# PATHs that exists ("" for null or when none does).
json_value() {
  "$wheelgate_venv/bin/python" -c '
import json, sys
document = json.loads(sys.stdin.read())
for path in sys.argv[1:]:
    node, found = document, True
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            found = False
            break
        node = node[key]
    if found:
        print("" if node is None else node)
        break
' "$@" <<<"$output"
}

# option FLAG VALUE: append FLAG VALUE to the array `args` unless VALUE is empty; an empty
# input leaves the command's own default (its WHEELGATE_* variable, boto3's endpoint).
option() {
  if [[ -n "$2" ]]; then
    args+=("$1" "$2")
  fi
}

# repeated FLAG TEXT: append FLAG LINE to the array `args` for each line of a multi-line input.
repeated() {
  local line
  while IFS= read -r line; do
    args+=("$1" "$line")
  done < <(lines "$2")
}

# boolean NAME VALUE: stop the step (exit 2) unless VALUE is true or false.
boolean() {
  case "$2" in
    true | false) ;;
    *)
      error "the $1 input takes true or false, not '$2'"
      exit 2
      ;;
  esac
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
      error "no file matches $pattern"
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
