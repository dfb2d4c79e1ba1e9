#!/usr/bin/env bash
# The HTML report of report.sh's campaign in headless Chromium (Debian's chromium package):
# loads with no console message at all (errors, CSP violations, exceptions), runs no injected
# script, and every chart renders (Chart.js sets the canvas size and the page marks it).
OUT=$1
source "$(dirname "$0")/../lib/common.sh"
HTML=$OUT/report.html
[ -s "$HTML" ] || fail "no report at $HTML (report_campaign must run first)"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || fail "chromium not installed (scripts/install-deps.sh installs it)"
size=$(stat -c %s "$HTML")
echo "report.html: $size bytes" >&2
# --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
  --user-data-dir="$T/profile" --window-size=1200,900 --enable-logging=stderr --v=0 \
  --virtual-time-budget=5000 --dump-dom "file://$HTML" > "$T/dom.html" 2> "$T/chromium.log" ||
  fail "chromium failed: $(tail -5 "$T/chromium.log")"
if grep -a "CONSOLE" "$T/chromium.log" > "$T/console.txt"; then
  fail "console messages: $(cat "$T/console.txt")"
fi
$KB_PY "$TESTS_DIR/report/check_dom.py" "$T/dom.html"
echo "PASS"
