#!/usr/bin/env bash
# The decoding aids on vLLM against `eval run --backend hf`, on the demo's model. PREPARED, NOT
# RUN: it needs a CUDA GPU and vLLM in an environment of its own, and it has not been run against
# vLLM yet (the toolkit's test machines have neither; docs/serving.md, "The aids on vLLM").
#
#   1. the demo's model as a plain model folder (`diaforge merge` when $DEMO/sft is a LoRA adapter)
#   2. `eval run --backend hf --device cuda` on the demo's 80 held-out dialogues (static and
#      dynamic): with the demo's aids, and with every aid and the loop stop off
#   3. `vllm serve` with the rules loaded by class path (diaforge.llm.vllm_rules:DiaforgeRules)
#   4. `eval run --backend openai` against that server: every aid off (`--base-url $URL`), and
#      the demo's aids (`--base-url vllm-rules+$URL`: the server applies the rules, so each request
#      sends its decoding, candidates and user's words in `vllm_xargs`); each compared with its
#      run of step 2: `eval compare` (paired difference in Acc) and the per-turn agreement of the
#      static turns
#   5. the aids turn by turn, free of diverging histories: every reference assistant turn of the
#      same dialogues asked of `HFBackend` on the GPU and of the server through `OpenAIBackend`
#      with the same `vllm-rules+` base URL, and the share of turns whose texts agree
#
# A reply the loop stop ended is `truncated` through hf (finish reason `loop`) but read as written
# through vLLM (the processor ends it with an end-of-turn token: finish reason `stop`), so the
# aided runs may differ in kinds where their texts agree (docs/serving.md, "The aids on vLLM").
#
# Run from the checkout, after `make demo` has written $DEMO/sft:
#   VLLM=/path/to/vllm-env/bin/vllm bash scripts/vllm_parity.sh
# The toolkit's own environment runs `eval` ($PY); vLLM's runs the server and imports the rules
# from this checkout (PYTHONPATH). A rerun skips an evaluation whose run folder holds metrics.json.
set -euo pipefail

DEMO=${DEMO:-outputs/demo}          # the demo's folder: sft/ is the model (or adapter) evaluated
OUT=${OUT:-outputs/vllm-parity}     # everything this comparison writes
PY=${PY:-python}                    # the toolkit's environment
VLLM=${VLLM:-vllm}                  # the `vllm` command of vLLM's environment
PORT=${PORT:-8011}
LIMIT=${LIMIT:-80}                  # held-out dialogues (the demo's seeded sample)
TURN_BUDGET=${TURN_BUDGET:-384}     # step 5's reply budget, the same on both sides
BENCH=eval/benchmarks/diabench_heldout_v1.jsonl
URL=http://127.0.0.1:$PORT/v1
AIDS=(--constrain-calls on --ground-values on --copy-thoughts on)
NO_AIDS=(--constrain-calls off --ground-values off --copy-thoughts off --loop-stop off)
COMMON=(--bench "$BENCH" --modes static,dynamic --limit "$LIMIT" --seed 0 --t-max 5 --no-tool-bench none)

mkdir -p "$OUT"
nvidia-smi >/dev/null || { echo "no CUDA GPU here: this script needs one" >&2; exit 2; }

# 1. A plain model folder: vLLM serves it whole, and both sides load the same weights.
MODEL=$DEMO/sft
if [ -f "$DEMO/sft/adapter_config.json" ]; then
  MODEL=$OUT/model
  [ -f "$MODEL/config.json" ] || "$PY" -m diaforge merge --adapter "$DEMO/sft" --output "$MODEL"
fi

# 2. The hf backend on the GPU: the demo's aids, then every aid (and the loop stop) off.
evaluate() {  # evaluate LABEL ARGS...: one `eval run` into $OUT/LABEL, skipped once it finished
  local label=$1; shift
  [ -f "$OUT/$label/metrics.json" ] || "$PY" -m diaforge eval run --model "$MODEL" --label "$label" \
      --out "$OUT/$label" --batch-size 16 "${COMMON[@]}" "$@"
}
evaluate hf-aided --backend hf --device cuda "${AIDS[@]}"
evaluate hf-unaided --backend hf --device cuda "${NO_AIDS[@]}"

# 3. vLLM with the rules, in bfloat16 as `eval run --backend hf` loads a model on a GPU. Custom
# logits processors run on vLLM's V1 model runner (the V2 runner takes processors of its own
# interface); async scheduling would hand the rules placeholder ids.
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" VLLM_USE_V2_MODEL_RUNNER=0 "$VLLM" serve "$MODEL" \
    --port "$PORT" --dtype bfloat16 --generation-config vllm --no-async-scheduling \
    --logits-processors diaforge.llm.vllm_rules:DiaforgeRules >"$OUT/vllm.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 600); do
  "$PY" -c "import urllib.request as u, sys; u.urlopen(sys.argv[1], timeout=2)" "http://127.0.0.1:$PORT/health" \
      2>/dev/null && break
  kill -0 "$SERVER" 2>/dev/null || { echo "vllm serve exited: see $OUT/vllm.log" >&2; exit 1; }
  sleep 1
done

# 4. The same runs through the server: every aid off, then the demo's aids sent per request
# (the executor `vllm-rules` in metrics.json); each compared with its hf run.
evaluate vllm-unaided --backend openai --base-url "$URL" "${NO_AIDS[@]}"
evaluate vllm-aided --backend openai --base-url "vllm-rules+$URL" "${AIDS[@]}"
"$PY" -m diaforge eval compare "$OUT/hf-unaided" "$OUT/vllm-unaided" "$OUT/hf-aided" "$OUT/vllm-aided" \
    --out "$OUT/compare"
"$PY" - "$OUT" <<'EOF'
import json, sys

def turns(run):
    out = {}
    for line in open(f"{run}/transcripts.jsonl", encoding="utf-8"):
        t = json.loads(line)
        if t["mode"] == "static" and t.get("split", "positive") == "positive":
            said = [x["raw"] for x in t["turns"] if x["role"] == "assistant"]
            out.update({(t["id"], i): raw for i, raw in enumerate(said)})
    return out

for what in ("unaided", "aided"):
    hf, served = turns(f"{sys.argv[1]}/hf-{what}"), turns(f"{sys.argv[1]}/vllm-{what}")
    executor = json.load(open(f"{sys.argv[1]}/vllm-{what}/metrics.json", encoding="utf-8"))["decoding"]["executor"]
    same = sum(hf[k] == served.get(k) for k in hf)
    print(f"static turns, {what}: {same}/{len(hf)} the same text through vLLM ({executor}) as through hf")
EOF

# 5. The aids turn by turn: HFBackend on the GPU against the server with the rules sent per request.
"$PY" - "$MODEL" "vllm-rules+$URL" "$BENCH" "$OUT/hf-aided" "$TURN_BUDGET" "$OUT/aided_turns.json" <<'EOF'
import asyncio, dataclasses, json, sys

from diaforge.format import PromptFormat
from diaforge.llm.base import GenerationRequest
from diaforge.llm.decoding import DecodingConfig
from diaforge.llm.hf_backend import HFBackend
from diaforge.llm.openai_backend import OpenAIBackend
from diaforge.schema import load_dialogues

model, url, bench, run, budget, out = sys.argv[1:]
fmt, aids = PromptFormat.load(model) or PromptFormat(), DecodingConfig(constrain_calls=True, ground_values=True, copy_thoughts=True)
ids = {json.loads(line)["id"] for line in open(f"{run}/transcripts.jsonl", encoding="utf-8")}
asked = []  # (dialogue id, turn index, the request as hf gets it, the messages as a server gets them)
for d in load_dialogues(bench):
    said = tuple(t.content for t in d.turns if t.role == "user" and t.content)
    for i, turn in enumerate(d.turns if d.id in ids else []):
        if turn.role == "assistant":
            r = GenerationRequest(fmt.messages(d, upto=i), fmt.tools(d), candidates=tuple(d.candidate_tools),
                                  said=said, decoding=aids, temperature=0.0, max_tokens=int(budget))
            asked.append((d.id, i, r, fmt.messages(d, upto=i, arguments_as="json")))
hf = HFBackend(model, device="cuda", dtype="bfloat16", default_temperature=None).generate_batch([a[2] for a in asked], batch_size=16)

async def served():  # the vllm-rules+ base URL: each request sends its rules in vllm_xargs
    async with OpenAIBackend(model, base_url=url, timeout=600, default_temperature=0.0) as backend:
        replies = await backend.generate_batch([dataclasses.replace(r, messages=m) for _, _, r, m in asked],
                                               batch_size=32)
    return [reply.text for reply in replies]

texts = asyncio.run(served())
differ = [{"id": a[0], "turn": a[1], "hf": h.text, "vllm": v} for a, h, v in zip(asked, hf, texts, strict=True) if h.text != v]
json.dump({"turns": len(asked), "same": len(asked) - len(differ), "differ": differ}, open(out, "w"), indent=1)
print(f"reference turns with the aids: {len(asked) - len(differ)}/{len(asked)} the same text through vLLM as through hf ({out})")
EOF
