#!/usr/bin/env bash
# The three arms at equal CPU time, from the demo's SFT checkpoint: about 3 x T seconds of training
# and 6 evaluations. Run on 2026-11-29 as `T=1380 ROLLOUTS=40 LIMIT=40` (docs/training.md, "The
# comparison at equal time"; 100 minutes in all on 2 cores).
#
#   arm 1  more SFT on fresh dialogues   (their generation counted against the arm)
#   arm 2  DAgger SFT                    (the rollouts' time counted against the arm; dagger_share)
#   arm 3  on-policy DPO                 (the same rollouts, their time counted against the arm)
#
# Each arm gets T seconds after the checkpoint. Training has no time limit of its own, so an arm's
# steps are the seconds left over the pace measured on this machine (SFT_STEP_S, DPO_STEP_S; the
# defaults are the demo's measured paces, docs/experiments.md "SFT against SFT + DPO at equal wall
# time": 1,892 s for 190 SFT steps; 20 DPO steps of four pairs in 1,380 s, about 300 of them on the
# reference's log-probabilities of its 80 pairs). Each arm is then evaluated on the same 80 held-out dialogues,
# dynamic, with every decoding aid off and with the demo's aids on, and compared with more SFT
# (paired intervals: `eval compare`; anatomy and decisions: each run's report.md).
#
# Run from the checkout, after `make demo` has written $DEMO/sft and $DEMO/data:
#   bash scripts/dagger_equal_time.sh                 # T=1380 s per arm, 40 rollouts
#   T=900 ROLLOUTS=24 OUT=outputs/dagger-small bash scripts/dagger_equal_time.sh
# Every command is resumable; a rerun skips an arm whose output folder holds its model.
set -euo pipefail

DEMO=${DEMO:-outputs/demo}             # the demo's folder: sft/ (the checkpoint) and data/ (its corpus)
OUT=${OUT:-outputs/dagger}             # everything this comparison writes
T=${T:-1380}                           # seconds each arm gets after the checkpoint
SFT_STEP_S=${SFT_STEP_S:-9.96}         # seconds per demo.yaml step here (1,892 / 190)
DPO_STEP_S=${DPO_STEP_S:-54}           # seconds per dpo.yaml step here ((1,380 - 300) / 20)
DPO_REF_PAIR_S=${DPO_REF_PAIR_S:-3.75}  # seconds per pair on the reference's log-probabilities (300 s for 80 pairs)
DPO_PAIRS_PER_STEP=4                   # dpo.yaml: batch 1 x gradient accumulation 4
ROLLOUTS=${ROLLOUTS:-40}               # training seeds the SFT model plays (about 20 s each on 2 cores)
SHARE=${SHARE:-0.5}                    # dagger_share: the share of the SFT samples from the visited states
LIMIT=${LIMIT:-80}                     # held-out dialogues evaluated
PY=${PY:-python}
CPU=(--config_file accelerate_configs/cpu.yaml)
BENCH=eval/benchmarks/diabench_heldout_v1.jsonl

mkdir -p "$OUT"
steps() { "$PY" -c "import sys; print(max(1, int((float(sys.argv[1])) / float(sys.argv[2]))))" "$1" "$2"; }
timed() { local start; start=$(date +%s); "$@"; echo $(( $(date +%s) - start )); }

# Arm 1: more SFT on fresh dialogues (seed 7: not the demo corpus's 0).
if [ ! -f "$OUT/sft-more/config.json" ]; then
  gen=$(timed "$PY" -m diaforge.data_gen generate --catalogue data_gen/assets/catalogue_train.json \
        --out "$OUT/fresh" --num-dialogues 200 --seed 7 --reasoning lookup --no-plots | tail -1)
  "$PY" -m diaforge.train.launch "${CPU[@]}" train/sft.py recipes/smollm2-135m/demo.yaml \
      --model_name_or_path "$DEMO/sft" --dataset_path "$OUT/fresh/dialogues.jsonl" \
      --output_dir "$OUT/sft-more" --max_steps "$(steps $((T - gen)) "$SFT_STEP_S")" --report_to none
fi

# The rollouts both new arms learn from; their seconds count against each of them.
if [ ! -f "$OUT/rollouts/stats.json" ]; then
  "$PY" -m diaforge.pipeline rollouts --model "$DEMO/sft" --out "$OUT/rollouts" \
      --num-dialogues "$ROLLOUTS" --t-max 5 --reasoning lookup --batch-size 8
fi
R=$("$PY" -c "import json,sys; print(int(json.load(open(sys.argv[1]))['run']['seconds']))" "$OUT/rollouts/stats.json")

# Arm 2: DAgger SFT, the visited states with the teacher's moves mixed into the demo's corpus.
if [ ! -f "$OUT/dagger/config.json" ]; then
  "$PY" -m diaforge.train.launch "${CPU[@]}" train/sft.py recipes/smollm2-135m/demo.yaml \
      --model_name_or_path "$DEMO/sft" --dataset_path "$DEMO/data/dialogues.jsonl" \
      --dagger_dataset_path "$OUT/rollouts/dialogues.jsonl" --dagger_share "$SHARE" \
      --output_dir "$OUT/dagger" --max_steps "$(steps $((T - R)) "$SFT_STEP_S")" --report_to none
fi

# Arm 3: on-policy DPO, the teacher's move chosen and the model's own rejected. The reference's
# log-probabilities are computed for every pair given, so it gets only the pairs its steps train on.
if [ ! -f "$OUT/dpo-onpolicy/adapter_config.json" ] && [ ! -f "$OUT/dpo-onpolicy/config.json" ]; then
  dpo_steps=$(steps $((T - R)) "$("$PY" -c "print($DPO_STEP_S + $DPO_PAIRS_PER_STEP * $DPO_REF_PAIR_S)")")
  "$PY" -m diaforge.train.launch "${CPU[@]}" train/dpo.py recipes/smollm2-135m/dpo.yaml \
      --model_name_or_path "$DEMO/sft" --pairs_path "$OUT/rollouts/pairs.jsonl" \
      --max_pairs $((dpo_steps * DPO_PAIRS_PER_STEP)) \
      --output_dir "$OUT/dpo-onpolicy" --max_steps "$dpo_steps" --report_to none
fi

# Evaluation: the same 80 dialogues, dynamic, aids off and the demo's aids on.
for arm in sft-more dagger dpo-onpolicy; do
  for aids in off on; do
    [ -f "$OUT/eval/$arm-$aids/metrics.json" ] && continue
    "$PY" -m diaforge.eval run --model "$OUT/$arm" --label "$arm-$aids" --out "$OUT/eval/$arm-$aids" \
        --bench "$BENCH" --limit "$LIMIT" --seed 0 --t-max 5 --modes dynamic --no-tool-bench none \
        --batch-size 8 --constrain-calls "$aids" --ground-values "$aids" --copy-thoughts "$aids"
  done
done
for aids in off on; do
  "$PY" -m diaforge.eval compare "$OUT/eval/sft-more-$aids" "$OUT/eval/dagger-$aids" \
      "$OUT/eval/dpo-onpolicy-$aids" --out "$OUT/compare-$aids"
done
echo "rollouts: $R s; tables: $OUT/compare-off/comparison.md, $OUT/compare-on/comparison.md"
