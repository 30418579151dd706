#!/usr/bin/env bash
# The checks that need a GPU machine, as one prepared script (docs/benchmarks.md):
#   1. the torch_llm SUT on the GPU, then `infermeter report` and `compare` of those
#      runs: the run's NVML device name must resolve to a part (no "Unknown GPU");
#   2. a real continuous-batching server (`transformers serve --continuous-batching`,
#      random-weight model from tiny_hf_model.py) measured by `infermeter run`;
#   3. the client-scaling table (1/2/4/8 client processes) on the machine's cores.
# Wheels the machine lacks travel in .whl (git-ignored through .git/info/exclude, named
# in the device call's carry): plotly for the report, and transformers serve's web stack.
# Fetched here for the machine's Python 3.12 (2026-11-26; about 18 MB):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux2014_x86_64 -d .whl plotly==7.1.0 \
#     fastapi==0.165.0 uvicorn==0.54.0 starlette==1.10.0 pydantic==2.14.4 \
#     pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
#     openai==3.57.0 jiter==0.19.0 distro sniffio==1.3.1 opentelemetry-api==1.45.2 \
#     typing_extensions==4.16.0 httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5
# Each step runs even if one before failed.
#
#   bash benchmarks/device/device_session.sh OUT_DIR [cuda|cpu]
set -u
out=${1:?OUT_DIR}
device=${2:-cuda}
mkdir -p "$out" /tmp/site
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl || echo "wheel install failed"
fi
export PYTHONPATH="$PWD/src:/tmp/site" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
im() { python3 -m infermeter "$@"; }
step() { echo; echo "=== $* ($(date +%T))"; }

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv 2>&1
echo "cpus: $(nproc)"
python3 -c "from infermeter.runs.folder import environment as e; print('run.json gpu:', e()['gpu'])"

step "1. torch_llm on $device, then report and compare"
python3 benchmarks/device/torch_llm_gpu.py --device "$device" --samples 256 \
  --duration-ms 5000 --out /tmp/gpu 2>&1 | tail -4
runs=$(find /tmp/gpu -name run.json -printf '%h\n' | sort)
echo "runs: $runs"
im report $runs -o "$out/report.html"; echo "report exit $?"
# compare's output goes to a file first: piped into head, its exit status would be
# the broken pipe's (1), not its own.
for r in $runs; do im compare "$r" >/tmp/compare.txt 2>&1; echo "compare exit $?"; head -12 /tmp/compare.txt; done

step "2. transformers serve --continuous-batching on $device"
python3 benchmarks/client/tiny_hf_model.py /tmp/tinyhf --hidden 1024 --layers 8 >/dev/null 2>&1
python3 -c 'import sys; from transformers.cli.transformers import main; sys.argv=["transformers", *sys.argv[1:]]; main()' \
  serve --continuous-batching --device "$device" --port 8011 /tmp/tinyhf >/tmp/serve.log 2>&1 &
server=$!
for _ in $(seq 90); do curl -sf -m 2 http://127.0.0.1:8011/health >/dev/null && break; sleep 1; done
im run --sut openai --url http://127.0.0.1:8011/v1 --model /tmp/tinyhf --api completions \
  --tokenizer /tmp/tinyhf/tokenizer.json --input-len 128 --output-len 64 \
  --target-qps 8 --min-duration 20s --performance-sample-count 256 \
  --output-dir /tmp/hfrun 2>&1 | tail -24
echo "run exit ${PIPESTATUS[0]}"
cp /tmp/hfrun/run.json "$out/hf_run.json" 2>/dev/null
kill "$server" 2>/dev/null; tail -3 /tmp/serve.log

step "3. client scaling, process transport"
python3 benchmarks/client/client_scaling.py --transport process --clients 1,2,4,8 \
  --server-workers 6 --requests 20000 --repeats 3 --out "$out/client_scaling.json" \
  2>&1 | grep '^{"transport' 
step "done"
