#!/usr/bin/env bash
# tmux captures of `run` and `sweep` on an 80x24 terminal, mid-run and at the end:
# docs/tty-run.txt and docs/tty-sweep.txt. Needs tmux; about 40 s.
#   PYTHONPATH=src bash docs/tty_capture.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python}
work=$(mktemp -d)
trap 'tmux kill-session -t imcap 2>/dev/null || true; rm -rf "$work"' EXIT

capture() {  # NAME COMMAND MID_S END_S
  local out="$here/tty-$1.txt"
  tmux new-session -d -s imcap -x 80 -y 24 "cd $work && $2; sleep 60"
  sleep "$3"
  { echo "# $2"; echo "# at ${3} s:"; tmux capture-pane -p -t imcap; } > "$out"
  sleep "$4"
  { echo "# at the end:"; tmux capture-pane -p -S -200 -t imcap; } >> "$out"
  tmux kill-session -t imcap
  echo "wrote $out"
}

capture run "$py -m infermeter run --min-duration 8s --output-dir run --store s.db" 12 20
"$py" - "$work" <<'PY' &
import sys, time
from infermeter.servers.mock import MockConfig, MockServer
server = MockServer(MockConfig(mode="timed", ttft="const:0.05", itl="const:0.01"), port=18731)
server.start()
time.sleep(60)
PY
sleep 2
capture sweep "$py -m infermeter sweep --url http://127.0.0.1:18731/v1 --model m --concurrency 1,2,4 --duration 3 --out sweep" 8 18
wait
