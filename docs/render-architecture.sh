#!/usr/bin/env bash
# Render docs/architecture.dot to docs/architecture.svg (or to the path given) with Graphviz.
# Needs `dot` (Debian: apt-get install graphviz). tests/infra/test_docs.py checks that the
# committed SVG matches this script's output.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/architecture.svg}"
command -v dot >/dev/null || { echo "dot not found: install Graphviz (apt-get install graphviz)" >&2; exit 2; }
dot -Tsvg "$here/architecture.dot" -o "$out"
