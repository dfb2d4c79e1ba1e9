#!/bin/sh
# Installs mock-llm (npm @dwmkerr/mock-llm, MIT), an OpenAI-compatible mock server the project
# did not write, into DIR (default build/npm) for tests/scheduler/campaign_keyless.sh: the
# keyless-endpoint test runs a campaign against it. Pinned version; needs node >= 18 and npm
# (Debian: nodejs npm, scripts/install-deps.sh) and the npm registry. Idempotent.
# usage: install-mock-llm.sh [DIR]
set -eu
dir=${1:-build/npm}
version=0.1.29
main=$dir/node_modules/@dwmkerr/mock-llm/dist/main.js
if [ -f "$main" ] && grep -q "\"version\": \"$version\"" "$dir/node_modules/@dwmkerr/mock-llm/package.json"; then
  exit 0
fi
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --no-save "@dwmkerr/mock-llm@$version"
[ -f "$main" ] || { echo "install-mock-llm: $main missing after npm install" >&2; exit 1; }
