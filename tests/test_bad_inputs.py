"""Every bad input, door by door: exit code 2, one line on stderr naming the file and the field, no
traceback, nothing half-written (no new file or folder, every earlier file byte for byte as it
was), and the fixed rerun passes. The commands run in-process (`main(argv)`), so the table stays
fast; the last tests run `python -m train.launch` and plain `accelerate launch` in a subprocess.

The fixed rerun is the same door with the case's fix (`Fix`: files rewritten or removed, or another
command line), made quick: one dialogue, no plots or exports, TF-IDF instead of MiniLM, one
benchmark dialogue in static mode. The training doors stop where training would start: the recipe
and the launcher's arguments parsed and checked (`train/sft.py`: and the dialogues loaded and
checked), with accelerate's launch itself stubbed out; `bench.run`'s rerun parses its command line.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# A small catalogue keeps the generation reruns quick (18 tools; k=5 needs 6).
TRAIN = ROOT / "tests" / "fixtures" / "catalogue_fleet_trials.json"
SMALL = ROOT / "tests" / "fixtures" / "dialogues_small.jsonl"
BENCH_LINES = (ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl").read_text(encoding="utf-8")
BENCH_OK = "".join(BENCH_LINES.splitlines(keepends=True)[:2])
NO_TOOL_LINES = (ROOT / "eval" / "benchmarks" / "diabench_heldout_v1_no_tool.jsonl").read_text(
    encoding="utf-8"
)
NO_TOOL_OK = "".join(NO_TOOL_LINES.splitlines(keepends=True)[:2])
PERSONAS_OK = "".join(
    (ROOT / "data_gen" / "assets" / "personas.jsonl")
    .read_text(encoding="utf-8")
    .splitlines(keepends=True)[:3]
)
CAT_OK = TRAIN.read_text(encoding="utf-8")
NON_UTF8 = b"# caf\xe9\nnum_dialogues: 2\n"
BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
FOLDER = None  # a files entry whose content is FOLDER is made as an empty folder


@dataclass
class Fix:
    """What a person does after reading the line: rewrite or remove files, or change the command."""

    files: dict[str, bytes | str] = field(default_factory=dict)
    remove: tuple[str, ...] = ()
    argv: list[str] | None = None


@dataclass
class Case:
    id: str
    command: str  # data_gen | eval | train | launch | bench
    files: dict[str, bytes | str | None]  # name -> content, written in the case's folder
    argv: list[str]  # {dir} is the case's folder
    needles: tuple[str, ...]  # what the line must hold (the file, the field, the reason)
    max_seconds: float | None = None
    fix: Fix | None = None


def _dialogue_calling_unoffered_tool() -> str:
    record = json.loads(SMALL.read_text(encoding="utf-8").splitlines()[0])
    for turn in record["turns"]:
        for call in turn.get("tool_calls") or []:
            call["name"] = "launch_rocket"
    return json.dumps(record) + "\n"


def _recipe(dataset: str, extra: str = "") -> str:
    return (
        f"model_name_or_path: tiny://llama\ndataset_path: {dataset}\noutput_dir: {{dir}}/sft\n"
        f"report_to: none\n{extra}"
    )


LAUNCH = ["--config_file", "accelerate_configs/cpu.yaml", "train/sft.py"]
RECIPE_OK = _recipe(str(SMALL))


def _cfg(text: str) -> str:
    return f"catalogue: {TRAIN}\nnum_dialogues: 2\n{text}"


CFG_OK = Fix({"c.yaml": _cfg("")})
CAT_FIX = Fix({"cat.json": CAT_OK})
DIALOGUES_FIX = Fix({"d.jsonl": SMALL.read_text(encoding="utf-8")})
BENCH_FIX = Fix({"b.jsonl": BENCH_OK})


def _one_tool(**record: object) -> str:
    tool = {
        "name": "get_order",
        "description": "Look up one order by its id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "description": "The order id."}},
            "required": ["order_id"],
        },
    }
    return json.dumps([{**tool, **record}, {**tool, "name": "get_invoice"}])


CASES = [
    # --- data_gen generate: configs
    Case(
        "config-not-utf8",
        "data_gen",
        {"c.yaml": NON_UTF8},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "line 1", "not UTF-8"),
    ),
    Case(
        "config-concurrency-lots",
        "data_gen",
        {"c.yaml": _cfg("concurrency: lots\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'concurrency'", "integer"),
    ),
    Case(
        "config-no-tool-share-above-1",
        "data_gen",
        {"c.yaml": _cfg("no_tool_share: 1.5\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'no_tool_share'", "at most 1"),
        fix=CFG_OK,
    ),
    Case(
        "config-no-tool-share-boolean",
        "data_gen",
        {"c.yaml": _cfg("no_tool_share: true\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'no_tool_share'", "a number"),
        fix=Fix({"c.yaml": _cfg("no_tool_share: 0.5\n")}),
    ),
    Case(
        "config-k-2.7-before-encoder",
        "data_gen",
        {"c.yaml": _cfg("k: 2.7\nencoder: minilm\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'k'", "integer"),
        max_seconds=5,
    ),
    Case(
        "config-inf",
        "data_gen",
        {"c.yaml": _cfg("roles: {user: {temperature: 1.0e+999}}\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "roles.user.temperature", "finite"),
    ),
    Case(
        "config-alias-bomb",
        "data_gen",
        {"c.yaml": BOMB},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "alias bomb"),
        max_seconds=1,
    ),
    Case(
        "config-too-deep",
        "data_gen",
        {"c.yaml": "a: " + "[" * 100_000},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml",),
    ),
    Case(
        "config-unknown-encoder",
        "data_gen",
        {"c.yaml": _cfg("encoder: bert\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'encoder'"),
    ),
    Case(
        "config-unknown-key",
        "data_gen",
        {"c.yaml": _cfg("bogus_key: 1\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "unknown config key 'bogus_key'"),
    ),
    Case(
        "config-yaml-syntax",
        "data_gen",
        {"c.yaml": _cfg("roles: [1\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "invalid YAML"),
    ),
    Case(
        "config-not-a-mapping",
        "data_gen",
        {"c.yaml": "- a\n- b\n"},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "mapping"),
    ),
    Case(
        "config-num-dialogues-negative",
        "data_gen",
        {"c.yaml": f"catalogue: {TRAIN}\nnum_dialogues: -2\n"},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'num_dialogues'", "at least 1"),
    ),
    Case(
        "config-t-max-0",
        "data_gen",
        {"c.yaml": _cfg("t_max: 0\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'t_max'", "at least 1"),
    ),
    Case(
        "config-temperature-not-a-number",
        "data_gen",
        {"c.yaml": _cfg("roles: {user: {temperature: hot}}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "roles.user.temperature", "number"),
    ),
    Case(
        "config-k-five",
        "data_gen",
        {"c.yaml": _cfg("k: five\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'k'", "must be an integer, got 'five'"),
    ),
    Case(
        "config-validators-string-no",
        "data_gen",
        {"c.yaml": _cfg('validators: "no"\n')},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'validators'", "must be true or false, got 'no'"),
    ),
    Case(
        "config-unknown-key-suggested",
        "data_gen",
        {"c.yaml": _cfg("t_mx: 4\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "unknown config key 't_mx'", "did you mean 't_max'"),
    ),
    Case(
        "config-renamed-key-named",
        "data_gen",
        {"c.yaml": _cfg("phrasing: heldout\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "unknown config key 'phrasing'", "did you mean 'wording'"),
    ),
    Case(
        "config-role-setting-wrong-type",
        "data_gen",
        {"c.yaml": _cfg("roles: {critique: {max_retries: [1]}}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'roles.critique.max_retries'", "must be an integer, got list"),
    ),
    Case(
        "config-missing",
        "data_gen",
        {},
        ["generate", "--config", "{dir}/missing.yaml", "--out", "{dir}/run"],
        ("missing.yaml", "not found"),
    ),
    # --- data_gen generate: flags and files
    Case(
        "out-is-a-file",
        "data_gen",
        {"out": "x"},
        ["generate", "--catalogue", str(TRAIN), "--out", "{dir}/out", "--num-dialogues", "1", "--quiet"],
        ("out", "not a folder"),
    ),
    Case(
        "num-dialogues-0",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--num-dialogues", "0"],
        ("--num-dialogues", "at least 1"),
    ),
    Case(
        "k-not-a-number",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--k", "2.7"],
        ("--k", "whole number"),
    ),
    Case(
        "concurrency-0",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--concurrency", "0", "--out", "{dir}/run"],
        ("--concurrency", "at least 1"),
    ),
    Case(
        "shard-index-out-of-range",
        "data_gen",
        {},
        [
            "generate",
            "--catalogue",
            str(TRAIN),
            "--num-shards",
            "2",
            "--shard-index",
            "5",
            "--out",
            "{dir}/run",
        ],
        ("shard_index", "[0, 1]"),
    ),
    Case(
        "catalogue-missing",
        "data_gen",
        {},
        ["generate", "--catalogue", "{dir}/missing.json", "--out", "{dir}/run"],
        ("missing.json", "does not exist"),
    ),
    Case(
        "catalogue-empty",
        "data_gen",
        {"cat.json": ""},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "empty"),
    ),
    Case(
        "catalogue-bad-json",
        "data_gen",
        {"cat.json": "{not json"},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "line 1", "invalid JSON"),
    ),
    Case(
        "catalogue-tool-without-name",
        "data_gen",
        {"cat.json": '[{"description": "no name"}]'},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "record 1", "'name'"),
    ),
    Case(
        "personas-missing",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--personas", "{dir}/nope.jsonl", "--out", "{dir}/run"],
        ("nope.jsonl", "not found"),
    ),
    Case(
        "personas-bad-json",
        "data_gen",
        {"p.jsonl": "not json\n"},
        ["generate", "--catalogue", str(TRAIN), "--personas", "{dir}/p.jsonl", "--out", "{dir}/run"],
        ("p.jsonl", "line 1", "invalid JSON"),
    ),
    Case(
        "dialogues-bad-json",
        "data_gen",
        {"d.jsonl": "not json\n"},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "invalid JSON"),
    ),
    Case(
        "dialogues-missing-field",
        "data_gen",
        {"d.jsonl": '{"id": "x"}\n'},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "'seed_tool'"),
    ),
    Case(
        "catalogue-nested-100000",
        "data_gen",
        {"cat.json": "[" * 100_000},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "nested deeper"),
    ),
    Case(
        "catalogue-not-utf8",
        "data_gen",
        {"cat.json": b'[{"name": "caf\xe9"}]'},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "UTF-8"),
    ),
    Case(
        "catalogue-inf",
        "data_gen",
        {
            "cat.json": '[{"name": "a", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "number", "maximum": 1e999}}}}]'
        },
        ["analyze", "--catalogue", "{dir}/cat.json"],
        ("cat.json", "finite"),
    ),
    Case(
        "catalogue-yaml-alias-bomb",
        "data_gen",
        {"cat.yaml": BOMB},
        ["analyze", "--catalogue", "{dir}/cat.yaml"],
        ("cat.yaml", "alias bomb"),
        max_seconds=1,
    ),
    Case(
        "personas-not-utf8",
        "data_gen",
        {"p.jsonl": b'{"id": "p", "description": "caf\xe9"}\n'},
        [
            "generate",
            "--catalogue",
            str(TRAIN),
            "--personas",
            "{dir}/p.jsonl",
            "--out",
            "{dir}/run",
        ],
        ("p.jsonl", "line 1", "UTF-8"),
    ),
    Case(
        "dialogues-not-utf8",
        "data_gen",
        {"d.jsonl": b'{"id": "\xff"}\n'},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "UTF-8"),
    ),
    Case(
        "dialogues-nested-100000",
        "data_gen",
        {"d.jsonl": "[" * 100_000 + "\n"},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "nested deeper"),
    ),
    Case(
        "dialogues-surrogate",
        "data_gen",
        {"d.jsonl": '{"id": "\\ud83d"}\n'},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "'id'", "surrogate"),
    ),
    # --- eval run: flags and files
    Case(
        "eval-limit-0", "eval", {}, ["run", "--backend", "random", "--limit", "0"], ("--limit", "at least 1")
    ),
    Case(
        "eval-limit-negative",
        "eval",
        {},
        ["run", "--backend", "random", "--limit", "-3"],
        ("--limit", "at least 1"),
    ),
    Case(
        "eval-n-voters-0",
        "eval",
        {},
        ["run", "--backend", "random", "--n-voters", "0"],
        ("--n-voters", "at least 1"),
    ),
    Case(
        "eval-n-samples-0",
        "eval",
        {},
        ["run", "--backend", "random", "--n-samples", "0"],
        ("--n-samples", "at least 1"),
    ),
    Case(
        "eval-t-max-0", "eval", {}, ["run", "--backend", "random", "--t-max", "0"], ("--t-max", "at least 1")
    ),
    Case(
        "eval-repeats-0",
        "eval",
        {},
        ["run", "--backend", "random", "--repeats", "0"],
        ("--repeats", "at least 1"),
    ),
    Case(
        "eval-repeats-negative",
        "eval",
        {},
        ["run", "--backend", "random", "--repeats", "-1"],
        ("--repeats", "at least 1"),
    ),
    Case(
        "eval-repeats-0-in-config",
        "eval",
        {"e.yaml": "backend: random\nrepeats: 0\n"},
        ["run", "--config", "{dir}/e.yaml"],
        ("e.yaml", "'repeats'", "at least 1"),
    ),
    Case(
        "eval-out-is-a-file",
        "eval",
        {"out": "x"},
        ["run", "--backend", "random", "--out", "{dir}/out"],
        ("out", "not a folder"),
    ),
    Case(
        "eval-bench-not-utf8",
        "eval",
        {"b.jsonl": b'{"id": "\xff"}\n'},
        ["run", "--backend", "random", "--bench", "{dir}/b.jsonl", "--out", "{dir}/run"],
        ("b.jsonl", "line 1", "UTF-8"),
    ),
    Case(
        "eval-bench-deep-args",
        "eval",
        {"b.jsonl": '{"id": "x", "args": ' + "[" * 300 + "]" * 300 + "}\n"},
        ["run", "--backend", "random", "--bench", "{dir}/b.jsonl", "--out", "{dir}/run"],
        ("b.jsonl", "line 1", "nested deeper"),
    ),
    Case(
        "eval-bench-missing",
        "eval",
        {},
        ["run", "--backend", "random", "--bench", "{dir}/nope.jsonl", "--out", "{dir}/run"],
        ("nope.jsonl", "not found"),
    ),
    Case(
        "eval-bench-bad-json",
        "eval",
        {"b.jsonl": "not json\n"},
        ["run", "--backend", "random", "--bench", "{dir}/b.jsonl", "--out", "{dir}/run"],
        ("b.jsonl", "line 1", "invalid JSON"),
    ),
    Case(
        "eval-batch-size-0",
        "eval",
        {},
        ["run", "--backend", "random", "--batch-size", "0", "--out", "{dir}/run"],
        ("--batch-size", "at least 1"),
    ),
    Case(
        "eval-max-new-tokens-0",
        "eval",
        {},
        ["run", "--backend", "random", "--max-new-tokens", "0", "--out", "{dir}/run"],
        ("--max-new-tokens", "at least 1"),
    ),
    Case(
        "eval-unknown-mode",
        "eval",
        {},
        ["run", "--backend", "random", "--modes", "sideways", "--out", "{dir}/run"],
        ("--modes", "'sideways'"),
    ),
    Case(
        "eval-compare-not-a-run",
        "eval",
        {},
        ["compare", "{dir}/nope1", "{dir}/nope2", "--out", "{dir}/cmp"],
        ("nope1", "metrics.json"),
    ),
    # --- train/sft.py: recipes and data
    Case(
        "recipe-epochs-negative",
        "train",
        {"r.yaml": "num_train_epochs: -3\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "num_train_epochs", "greater than 0"),
    ),
    Case(
        "recipe-lr-inf",
        "train",
        {"r.yaml": "learning_rate: 1.0e999\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "learning_rate", "finite"),
    ),
    Case(
        "recipe-not-utf8",
        "train",
        {"r.yaml": b"# caf\xe9\nnum_train_epochs: 1\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "line 1", "UTF-8"),
    ),
    Case(
        "recipe-alias-bomb",
        "train",
        {"r.yaml": BOMB},
        ["{dir}/r.yaml"],
        ("r.yaml", "alias bomb"),
        max_seconds=1,
    ),
    Case(
        "train-call-to-unoffered-tool",
        "train",
        {
            "d.jsonl": _dialogue_calling_unoffered_tool(),
            "r.yaml": "model_name_or_path: tiny://llama\ndataset_path: {dir}/d.jsonl\noutput_dir: {dir}/sft\nreport_to: none\n",
        },
        ["{dir}/r.yaml"],
        ("d.jsonl", "tool_calls", "launch_rocket", "candidate_tools"),
    ),
    Case(
        "recipe-unknown-key",
        "train",
        {"r.yaml": "learning_rat: 2.0e-4\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "unknown key 'learning_rat'"),
    ),
    Case(
        "recipe-no-dataset",
        "train",
        {"r.yaml": "output_dir: {dir}/sft\nreport_to: none\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "not set"),
    ),
    Case(
        "recipe-dataset-missing",
        "train",
        {"r.yaml": _recipe("{dir}/nope.jsonl")},
        ["{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "nope.jsonl", "not found"),
    ),
    Case(
        "train-dialogues-not-utf8",
        "train",
        {"d.jsonl": b'{"id": "\xff"}\n', "r.yaml": _recipe("{dir}/d.jsonl")},
        ["{dir}/r.yaml"],
        ("d.jsonl", "line 1", "UTF-8"),
    ),
    Case(
        "recipe-yaml-syntax",
        "train",
        {"r.yaml": "num_train_epochs: [1\n"},
        ["{dir}/r.yaml"],
        ("r.yaml:2",),
    ),
    Case(
        "recipe-not-a-mapping",
        "train",
        {"r.yaml": "- 1\n- 2\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "mapping"),
    ),
    Case(
        "recipe-lora-r-not-a-number",
        "train",
        {"r.yaml": "lora_r: many\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "lora_r", "'many'"),
    ),
    Case(
        "recipe-max-steps-0",
        "train",
        {"r.yaml": "max_steps: 0\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "max_steps"),
    ),
    Case(
        "recipe-prompt-mode-unknown",
        "train",
        {"r.yaml": "prompt_mode: sideways\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "prompt_mode", "'sideways'"),
    ),
    Case("recipe-missing", "train", {}, ["{dir}/nope.yaml"], ("nope.yaml", "not found")),
    Case(
        "recipe-unknown-override",
        "train",
        {"r.yaml": _recipe(str(SMALL))},
        ["{dir}/r.yaml", "--bogus_flag", "1"],
        ("--bogus_flag", "not a recipe key"),
    ),
    Case(
        "train-dialogues-bad-json",
        "train",
        {"d.jsonl": "not json\n", "r.yaml": _recipe("{dir}/d.jsonl")},
        ["{dir}/r.yaml"],
        ("d.jsonl", "line 1", "invalid JSON"),
    ),
    Case(
        "train-dialogues-empty",
        "train",
        {"d.jsonl": "", "r.yaml": _recipe("{dir}/d.jsonl")},
        ["{dir}/r.yaml"],
        ("d.jsonl", "no records"),
    ),
    Case(
        "train-model-path-missing",
        "train",
        {"r.yaml": _recipe(str(SMALL)).replace("tiny://llama", "{dir}/nomodel")},
        ["{dir}/r.yaml"],
        ("model_name_or_path", "nomodel", "no such folder"),
    ),
    # --- python -m train.launch (accelerate launch with the recipe checked first): no process starts
    Case(
        "launch-recipe-epochs-negative",
        "launch",
        {"r.yaml": "num_train_epochs: -3\n"},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "num_train_epochs", "greater than 0"),
    ),
    Case(
        "launch-override-not-a-number",
        "launch",
        {"r.yaml": _recipe(str(SMALL))},
        [*LAUNCH, "{dir}/r.yaml", "--learning_rate", "fast"],
        ("r.yaml", "learning_rate", "fast"),
    ),
    Case(
        "launch-dataset-missing",
        "launch",
        {"r.yaml": _recipe("{dir}/nope.jsonl")},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "nope.jsonl", "not found"),
    ),
    Case(
        "launch-prefix-shared-flash",
        "launch",
        {"r.yaml": _recipe(str(SMALL)) + "slicing: prefix_shared\nattn_implementation: flash_attention_2\n"},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "prefix_shared", "attn_implementation"),
    ),
]


def _swap(argv: list[str], old: str, new: str) -> list[str]:
    return [new if a == old else a for a in argv]


# The fixes of the cases above, by id.
FIXES: dict[str, Fix] = {
    "config-not-utf8": CFG_OK,
    "config-concurrency-lots": Fix({"c.yaml": _cfg("concurrency: 2\n")}),
    "config-k-2.7-before-encoder": Fix({"c.yaml": _cfg("k: 2\nencoder: tfidf\n")}),
    "config-inf": Fix({"c.yaml": _cfg("roles: {user: {temperature: 1.0}}\n")}),
    "config-alias-bomb": CFG_OK,
    "config-too-deep": CFG_OK,
    "config-unknown-encoder": Fix({"c.yaml": _cfg("encoder: tfidf\n")}),
    "config-unknown-key": CFG_OK,
    "config-yaml-syntax": CFG_OK,
    "config-not-a-mapping": CFG_OK,
    "config-num-dialogues-negative": CFG_OK,
    "config-t-max-0": Fix({"c.yaml": _cfg("t_max: 4\n")}),
    "config-temperature-not-a-number": Fix({"c.yaml": _cfg("roles: {user: {temperature: 0.7}}\n")}),
    "config-k-five": Fix({"c.yaml": _cfg("k: 5\n")}),
    "config-validators-string-no": Fix({"c.yaml": _cfg("validators: false\n")}),
    "config-unknown-key-suggested": Fix({"c.yaml": _cfg("t_max: 4\n")}),
    "config-renamed-key-named": Fix({"c.yaml": _cfg("wording: heldout\n")}),
    "config-role-setting-wrong-type": Fix({"c.yaml": _cfg("roles: {critique: {max_retries: 1}}\n")}),
    "config-missing": Fix({"missing.yaml": _cfg("")}),
    "out-is-a-file": Fix(argv=["generate", "--catalogue", str(TRAIN), "--out", "{dir}/run"]),
    "num-dialogues-0": Fix(argv=["generate", "--catalogue", str(TRAIN), "--num-dialogues", "1"]),
    "k-not-a-number": Fix(argv=["generate", "--catalogue", str(TRAIN), "--k", "2"]),
    "concurrency-0": Fix(
        argv=["generate", "--catalogue", str(TRAIN), "--concurrency", "1", "--out", "{dir}/run"]
    ),
    "shard-index-out-of-range": Fix(
        argv=[
            "generate",
            "--catalogue",
            str(TRAIN),
            "--num-shards",
            "2",
            "--shard-index",
            "0",
            "--out",
            "{dir}/run",
        ]
    ),
    "catalogue-missing": Fix({"missing.json": CAT_OK}),
    "catalogue-empty": CAT_FIX,
    "catalogue-bad-json": CAT_FIX,
    "catalogue-tool-without-name": CAT_FIX,
    "personas-missing": Fix({"nope.jsonl": PERSONAS_OK}),
    "personas-bad-json": Fix({"p.jsonl": PERSONAS_OK}),
    "dialogues-bad-json": DIALOGUES_FIX,
    "dialogues-missing-field": DIALOGUES_FIX,
    "catalogue-nested-100000": CAT_FIX,
    "catalogue-not-utf8": CAT_FIX,
    "catalogue-inf": CAT_FIX,
    "catalogue-yaml-alias-bomb": Fix({"cat.yaml": CAT_OK}),  # JSON is YAML
    "personas-not-utf8": Fix({"p.jsonl": PERSONAS_OK}),
    "dialogues-not-utf8": DIALOGUES_FIX,
    "dialogues-nested-100000": DIALOGUES_FIX,
    "dialogues-surrogate": DIALOGUES_FIX,
    "eval-limit-0": Fix(argv=["run", "--backend", "random", "--limit", "1"]),
    "eval-limit-negative": Fix(argv=["run", "--backend", "random", "--limit", "1"]),
    "eval-n-voters-0": Fix(argv=["run", "--backend", "random", "--n-voters", "1"]),
    "eval-n-samples-0": Fix(argv=["run", "--backend", "random", "--n-samples", "1"]),
    "eval-t-max-0": Fix(argv=["run", "--backend", "random", "--t-max", "2"]),
    "eval-repeats-0": Fix(argv=["run", "--backend", "random", "--repeats", "2"]),
    "eval-repeats-negative": Fix(argv=["run", "--backend", "random", "--repeats", "1"]),
    "eval-repeats-0-in-config": Fix({"e.yaml": "backend: random\nrepeats: 2\n"}),
    "eval-out-is-a-file": Fix(argv=["run", "--backend", "random", "--out", "{dir}/run"]),
    "eval-bench-not-utf8": BENCH_FIX,
    "eval-bench-deep-args": BENCH_FIX,
    "eval-bench-missing": Fix({"nope.jsonl": BENCH_OK}),
    "eval-bench-bad-json": BENCH_FIX,
    "eval-batch-size-0": Fix(argv=["run", "--backend", "random", "--batch-size", "1", "--out", "{dir}/run"]),
    "eval-max-new-tokens-0": Fix(
        argv=["run", "--backend", "random", "--max-new-tokens", "64", "--out", "{dir}/run"]
    ),
    "eval-unknown-mode": Fix(argv=["run", "--backend", "random", "--modes", "static", "--out", "{dir}/run"]),
    "eval-compare-not-a-run": Fix(argv=["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp"]),
    "recipe-epochs-negative": Fix({"r.yaml": RECIPE_OK + "num_train_epochs: 1\n"}),
    "recipe-lr-inf": Fix({"r.yaml": RECIPE_OK + "learning_rate: 1.0e-4\n"}),
    "recipe-not-utf8": Fix({"r.yaml": RECIPE_OK}),
    "recipe-alias-bomb": Fix({"r.yaml": RECIPE_OK}),
    "train-call-to-unoffered-tool": DIALOGUES_FIX,
    "recipe-unknown-key": Fix({"r.yaml": RECIPE_OK + "learning_rate: 2.0e-4\n"}),
    "recipe-no-dataset": Fix({"r.yaml": RECIPE_OK}),
    "recipe-dataset-missing": Fix({"nope.jsonl": SMALL.read_text(encoding="utf-8")}),
    "train-dialogues-not-utf8": DIALOGUES_FIX,
    "recipe-yaml-syntax": Fix({"r.yaml": RECIPE_OK + "num_train_epochs: 1\n"}),
    "recipe-not-a-mapping": Fix({"r.yaml": RECIPE_OK}),
    "recipe-lora-r-not-a-number": Fix({"r.yaml": RECIPE_OK + "lora_r: 8\n"}),
    "recipe-max-steps-0": Fix({"r.yaml": RECIPE_OK + "max_steps: 1\n"}),
    "recipe-prompt-mode-unknown": Fix({"r.yaml": RECIPE_OK + "prompt_mode: native\n"}),
    "recipe-missing": Fix({"nope.yaml": RECIPE_OK}),
    "recipe-unknown-override": Fix(argv=["{dir}/r.yaml", "--learning_rate", "1e-4"]),
    "train-dialogues-bad-json": DIALOGUES_FIX,
    "train-dialogues-empty": DIALOGUES_FIX,
    "train-model-path-missing": Fix({"r.yaml": RECIPE_OK}),
    "launch-recipe-epochs-negative": Fix({"r.yaml": RECIPE_OK + "num_train_epochs: 1\n"}),
    "launch-override-not-a-number": Fix(argv=[*LAUNCH, "{dir}/r.yaml", "--learning_rate", "1e-4"]),
    "launch-dataset-missing": Fix({"nope.jsonl": SMALL.read_text(encoding="utf-8")}),
    "launch-prefix-shared-flash": Fix(
        {"r.yaml": RECIPE_OK + "slicing: prefix_shared\nattn_implementation: sdpa\n"}
    ),
}
for _case in CASES:
    _case.fix = _case.fix or FIXES[_case.id]


def _gen(*extra: str) -> list[str]:
    return ["generate", "--catalogue", str(TRAIN), *extra]


def _analyze(name: str) -> list[str]:
    return ["analyze", "--catalogue", "{dir}/" + name, "--encoder", "tfidf"]


def _export(*extra: str) -> list[str]:
    return ["export", str(SMALL), "--format", "hf-prompt", *extra]


def _run(*extra: str) -> list[str]:
    return ["run", "--backend", "random", "--limit", "1", "--modes", "static", *extra]


PAPER_MAP = json.dumps(
    {
        "get_order": {
            "description": "Look up one order.",
            "params": {"order_id": {"type": "string", "description": "Id.", "required": True}},
        }
    }
)
OPENAPI = """openapi: 3.0.0
info: {title: shop, version: "1"}
paths:
  /orders/{order_id}:
    get:
      operationId: get_order
      summary: Look up one order.
      parameters:
        - {name: order_id, in: path, required: true, schema: {type: string}}
"""
ADAPTER = json.dumps({"base_model_name_or_path": "HuggingFaceTB/SmolLM2-135M-Instruct", "peft_type": "LORA"})

# The doors of issue 25: each input gave a traceback, was accepted (sometimes silently wrong), or
# got a misleading line.
CASES += [
    # --- python -m data_gen generate
    Case(
        "gen-out-below-a-file",
        "data_gen",
        {"f": "x"},
        _gen("--out", "{dir}/f/run"),
        ("f/run", "'--out'", "is a file"),
        fix=Fix(argv=_gen("--out", "{dir}/run")),
    ),
    Case(
        "gen-out-under-proc",
        "data_gen",
        {},
        _gen("--out", "/proc/diaforge/run"),
        ("/proc/diaforge/run", "'--out'", "cannot create"),
        fix=Fix(argv=_gen("--out", "{dir}/run")),
    ),
    Case(
        "gen-out-under-dev-full",
        "data_gen",
        {},
        _gen("--out", "/dev/full/run"),
        ("/dev/full/run", "'--out'", "/dev/full is a file"),
        fix=Fix(argv=_gen("--out", "{dir}/run")),
    ),
    Case(
        "gen-config-out-below-a-file",
        "data_gen",
        {"f": "x", "c.yaml": _cfg("out: {dir}/f/run\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("f/run", "'out'", "is a file"),
        fix=Fix({"c.yaml": _cfg("out: {dir}/run\n")}),
    ),
    Case(
        "gen-num-dialogues-10e12",
        "data_gen",
        {},
        _gen("--num-dialogues", "1000000000000", "--out", "{dir}/run"),
        ("--num-dialogues", "at most 1,000,000"),
        max_seconds=5,
        fix=Fix(argv=_gen("--num-dialogues", "1", "--out", "{dir}/run")),
    ),
    Case(
        "gen-concurrency-100000",
        "data_gen",
        {},
        _gen("--concurrency", "100000", "--out", "{dir}/run"),
        ("--concurrency", "at most 1,024"),
        fix=Fix(argv=_gen("--concurrency", "64", "--out", "{dir}/run")),
    ),
    Case(
        "gen-backend-bogus",
        "data_gen",
        {"c.yaml": _cfg("")},
        ["generate", "--config", "{dir}/c.yaml", "--backend", "bogus", "--out", "{dir}/run"],
        ("--backend", "'bogus'"),
        fix=Fix(argv=["generate", "--config", "{dir}/c.yaml", "--backend", "scripted", "--out", "{dir}/run"]),
    ),
    Case(
        "config-duplicate-key",
        "data_gen",
        {"c.yaml": _cfg("k: 2\nk: 3\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "line 4", "'k'", "duplicate key", "line 3"),
        fix=Fix({"c.yaml": _cfg("k: 3\n")}),
    ),
    Case(
        "config-duplicate-nested-key",
        "data_gen",
        {"c.yaml": _cfg("roles:\n  user: {temperature: 0.5, temperature: 0.9}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'roles.user.temperature'", "duplicate key"),
        fix=Fix({"c.yaml": _cfg("roles:\n  user: {temperature: 0.9}\n")}),
    ),
    Case(
        "config-duplicate-top-key-num-dialogues",
        "data_gen",
        {"c.yaml": _cfg("num_dialogues: 3\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'num_dialogues'", "duplicate key"),
        fix=CFG_OK,
    ),
    Case(
        "config-negative-price",
        "data_gen",
        {"c.yaml": _cfg("prices: {gpt-4o: {input_per_million: -1, output_per_million: 10}}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'prices.gpt-4o.input_per_million'", "0 or more"),
        fix=Fix({"c.yaml": _cfg("prices: {gpt-4o: {input_per_million: 2.5, output_per_million: 10}}\n")}),
    ),
    Case(
        "config-price-key-typo",
        "data_gen",
        {"c.yaml": _cfg("prices: {gpt-4o: {input_per_milion: 2.5}}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "prices.gpt-4o.input_per_milion", "did you mean 'input_per_million'"),
        fix=Fix({"c.yaml": _cfg("prices: {gpt-4o: {input_per_million: 2.5}}\n")}),
    ),
    Case(
        "config-concurrency-100000",
        "data_gen",
        {"c.yaml": _cfg("concurrency: 100000\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'concurrency'", "at most 1,024"),
        fix=Fix({"c.yaml": _cfg("concurrency: 16\n")}),
    ),
    Case(
        "config-num-dialogues-10e12",
        "data_gen",
        {"c.yaml": f"catalogue: {TRAIN}\nnum_dialogues: 1000000000000\n"},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'num_dialogues'", "at most 1,000,000", "num_shards"),
        max_seconds=5,
        fix=CFG_OK,
    ),
    Case(
        "config-is-dev-zero",
        "data_gen",
        {},
        ["generate", "--config", "/dev/zero", "--out", "{dir}/run"],
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix({"c.yaml": _cfg("")}, argv=["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"]),
    ),
    Case(
        "config-is-a-folder",
        "data_gen",
        {"c.yaml": FOLDER},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "directory"),
        fix=Fix({"c2.yaml": _cfg("")}, argv=["generate", "--config", "{dir}/c2.yaml", "--out", "{dir}/run"]),
    ),
    Case(
        "catalogue-is-dev-zero",
        "data_gen",
        {},
        ["generate", "--catalogue", "/dev/zero", "--out", "{dir}/run"],
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix(argv=_gen("--out", "{dir}/run")),
    ),
    Case(
        "personas-is-dev-zero",
        "data_gen",
        {},
        _gen("--personas", "/dev/zero", "--out", "{dir}/run"),
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix({"p.jsonl": PERSONAS_OK}, argv=_gen("--personas", "{dir}/p.jsonl", "--out", "{dir}/run")),
    ),
    Case(
        "gen-catalogue-key-typo",
        "data_gen",
        {"cat.json": _one_tool(paramters={})},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "record 1", "'paramters'", "did you mean 'parameters'"),
        fix=CAT_FIX,
    ),
    Case(
        "run-json-unreadable",
        "data_gen",
        {"run/run.json": "{not json", "run/dialogues.jsonl": SMALL.read_text(encoding="utf-8")},
        _gen("--out", "{dir}/run"),
        ("run.json", "remove this file alone", "records stay"),
        fix=Fix(remove=("run/run.json",)),
    ),
    # --- python -m data_gen analyze: unknown and duplicate keys in every catalogue format
    Case(
        "cat-bare-paramters",
        "data_gen",
        {"cat.json": _one_tool(paramters={})},
        _analyze("cat.json"),
        ("cat.json", "record 1 ('get_order')", "'paramters'", "did you mean 'parameters'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-bare-descripton",
        "data_gen",
        {"cat.json": _one_tool(descripton="x")},
        _analyze("cat.json"),
        ("cat.json", "'descripton'", "did you mean 'description'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-wrapped-record-key",
        "data_gen",
        {
            "cat.json": json.dumps(
                [
                    {
                        "type": "function",
                        "fuction": {"name": "a"},
                        "function": {"name": "b", "description": "d"},
                    }
                ]
            )
        },
        _analyze("cat.json"),
        ("cat.json", "'fuction'", "did you mean 'function'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-wrapped-proprties",
        "data_gen",
        {
            "cat.json": json.dumps(
                [
                    {
                        "type": "function",
                        "function": {
                            "name": "a",
                            "description": "d",
                            "parameters": {"type": "object", "proprties": {}},
                        },
                    }
                ]
            )
        },
        _analyze("cat.json"),
        ("cat.json", "'function.parameters.proprties'", "did you mean 'properties'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-property-key-typo",
        "data_gen",
        {
            "cat.json": _one_tool(
                parameters={
                    "type": "object",
                    "properties": {"order_id": {"type": "string", "descriptoin": "Id."}},
                }
            )
        },
        _analyze("cat.json"),
        ("cat.json", "'parameters.properties.order_id.descriptoin'", "did you mean 'description'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-items-key-typo",
        "data_gen",
        {
            "cat.json": _one_tool(
                parameters={
                    "type": "object",
                    "properties": {"ids": {"type": "array", "items": {"tpye": "string"}}},
                }
            )
        },
        _analyze("cat.json"),
        ("cat.json", "'parameters.properties.ids.items.tpye'", "did you mean 'type'"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-jsonl-key-typo",
        "data_gen",
        {
            "cat.jsonl": json.dumps({"name": "a", "description": "d"})
            + "\n"
            + json.dumps({"name": "b", "descriptio": "d"})
            + "\n"
        },
        _analyze("cat.jsonl"),
        ("cat.jsonl", "line 2", "'descriptio'"),
        fix=Fix({"cat.jsonl": "".join(json.dumps(t) + "\n" for t in json.loads(CAT_OK))}),
    ),
    Case(
        "cat-paper-map-key-typo",
        "data_gen",
        {"cat.json": PAPER_MAP.replace('"description": "Id."', '"descripton": "Id."')},
        _analyze("cat.json"),
        ("cat.json", "'params.order_id.descripton'", "did you mean 'description'"),
        fix=Fix({"cat.json": PAPER_MAP}),
    ),
    Case(
        "cat-paper-map-tool-key-typo",
        "data_gen",
        {"cat.json": PAPER_MAP.replace('"params"', '"parms"')},
        _analyze("cat.json"),
        ("cat.json", "'parms'", "did you mean 'params'"),
        fix=Fix({"cat.json": PAPER_MAP}),
    ),
    Case(
        "cat-openapi-operation-key-typo",
        "data_gen",
        {"cat.yaml": OPENAPI.replace("      parameters:", "      paramters:")},
        _analyze("cat.yaml"),
        ("cat.yaml", "GET /orders/{order_id}", "'paramters'", "did you mean 'parameters'"),
        fix=Fix({"cat.yaml": OPENAPI}),
    ),
    Case(
        "cat-openapi-parameter-key-typo",
        "data_gen",
        {"cat.yaml": OPENAPI.replace("required: true", "requried: true")},
        _analyze("cat.yaml"),
        ("cat.yaml", "'parameters[0].requried'", "did you mean 'required'"),
        fix=Fix({"cat.yaml": OPENAPI}),
    ),
    Case(
        "cat-yaml-duplicate-key",
        "data_gen",
        {"cat.yaml": OPENAPI.replace("      summary:", "      operationId: get_order2\n      summary:")},
        _analyze("cat.yaml"),
        ("cat.yaml", "'paths./orders/{order_id}.get.operationId'", "duplicate key"),
        fix=Fix({"cat.yaml": OPENAPI}),
    ),
    Case(
        "cat-json-duplicate-key",
        "data_gen",
        {"cat.json": _one_tool()[:-2] + ', "name": "again"}]'},
        _analyze("cat.json"),
        ("cat.json", "'name'", "duplicate key"),
        fix=CAT_FIX,
    ),
    Case(
        "cat-jsonl-duplicate-key",
        "data_gen",
        {"cat.jsonl": '{"name": "a", "description": "d", "description": "e"}\n{"name": "b"}\n'},
        _analyze("cat.jsonl"),
        ("cat.jsonl", "line 1", "'description'", "duplicate key"),
        fix=Fix({"cat.jsonl": '{"name": "a", "description": "e"}\n{"name": "b"}\n'}),
    ),
    Case(
        "cat-is-dev-zero",
        "data_gen",
        {},
        ["analyze", "--catalogue", "/dev/zero"],
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix(argv=["analyze", "--catalogue", str(TRAIN)]),
    ),
    Case(
        "cat-is-a-folder",
        "data_gen",
        {"cat": FOLDER},
        _analyze("cat"),
        ("cat", "directory"),
        fix=Fix({"cat.json": CAT_OK}, argv=_analyze("cat.json")),
    ),
    Case(
        "cat-invalid-record-advice",
        "data_gen",
        {"cat.jsonl": '{"name": "a", "description": "d"}\n{"description": "no name"}\n'},
        _analyze("cat.jsonl"),
        ("cat.jsonl", "line 2", "'name'", "fix or remove this record"),
        fix=Fix({"cat.jsonl": '{"name": "a", "description": "d"}\n'}),
    ),
    Case(
        "analyze-threshold-2",
        "data_gen",
        {},
        ["analyze", "--catalogue", str(TRAIN), "--threshold", "2"],
        ("--threshold", "[0, 1]"),
        fix=Fix(argv=["analyze", "--catalogue", str(TRAIN), "--threshold", "0.7"]),
    ),
    # --- python -m data_gen analyze-corpus
    Case(
        "corpus-is-dev-zero",
        "data_gen",
        {},
        ["analyze-corpus", "/dev/zero"],
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix(argv=["analyze-corpus", str(SMALL)]),
    ),
    Case(
        "corpus-is-a-folder",
        "data_gen",
        {"d": FOLDER},
        ["analyze-corpus", "{dir}/d"],
        ("d", "directory"),
        fix=Fix(argv=["analyze-corpus", str(SMALL)]),
    ),
    Case(
        "corpus-counter-bogus",
        "data_gen",
        {},
        ["analyze-corpus", str(SMALL), "--counter", "bogus"],
        ("--counter", "'bogus'"),
        fix=Fix(argv=["analyze-corpus", str(SMALL), "--counter", "value"]),
    ),
    Case(
        "corpus-concurrency-100000",
        "data_gen",
        {},
        ["analyze-corpus", str(SMALL), "--concurrency", "100000"],
        ("--concurrency", "at most"),
        fix=Fix(argv=["analyze-corpus", str(SMALL), "--concurrency", "4"]),
    ),
    # --- python -m data_gen export
    Case(
        "export-system-prompt-not-utf8",
        "data_gen",
        {"s.txt": b"caf\xe9"},
        _export("--out", "{dir}/ex", "--system-prompt-file", "{dir}/s.txt"),
        ("s.txt", "line 1", "not UTF-8"),
        fix=Fix({"s.txt": "You pick tools.\n{tools}\n"}),
    ),
    Case(
        "export-system-prompt-missing",
        "data_gen",
        {},
        _export("--out", "{dir}/ex", "--system-prompt-file", "{dir}/s.txt"),
        ("s.txt", "not found"),
        fix=Fix({"s.txt": "You pick tools.\n"}),
    ),
    Case(
        "export-system-prompt-empty",
        "data_gen",
        {"s.txt": "  \n"},
        _export("--out", "{dir}/ex", "--system-prompt-file", "{dir}/s.txt"),
        ("s.txt", "empty"),
        fix=Fix({"s.txt": "You pick tools.\n"}),
    ),
    Case(
        "export-system-prompt-dev-zero",
        "data_gen",
        {},
        _export("--out", "{dir}/ex", "--system-prompt-file", "/dev/zero"),
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-out-is-a-file",
        "data_gen",
        {"f": "x"},
        _export("--out", "{dir}/f"),
        ("f", "'--out'", "not a folder"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-out-below-a-file",
        "data_gen",
        {"f": "x"},
        _export("--out", "{dir}/f/ex"),
        ("f/ex", "'--out'", "is a file"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-out-under-dev-full",
        "data_gen",
        {},
        _export("--out", "/dev/full/ex"),
        ("/dev/full/ex", "'--out'"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-out-under-proc",
        "data_gen",
        {},
        _export("--out", "/proc/diaforge/ex"),
        ("/proc/diaforge/ex", "'--out'"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-tokenizer-missing",
        "data_gen",
        {},
        _export("--out", "{dir}/ex", "--tokenizer", "{dir}/nope"),
        ("nope", "no such folder", "--tokenizer"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-tokenizer-is-a-file",
        "data_gen",
        {"tok": "x"},
        _export("--out", "{dir}/ex", "--tokenizer", "{dir}/tok"),
        ("tok", "is a file", "--tokenizer"),
        fix=Fix(argv=_export("--out", "{dir}/ex")),
    ),
    Case(
        "export-dialogues-bad-json",
        "data_gen",
        {"d.jsonl": "not json\n"},
        ["export", "{dir}/d.jsonl", "--format", "hf-prompt", "--out", "{dir}/ex"],
        ("d.jsonl", "line 1", "invalid JSON"),
        fix=DIALOGUES_FIX,
    ),
    Case(
        "export-dialogues-missing",
        "data_gen",
        {},
        ["export", "{dir}/d.jsonl", "--format", "hf-prompt", "--out", "{dir}/ex"],
        ("d.jsonl", "not found"),
        fix=DIALOGUES_FIX,
    ),
    # --- python -m data_gen build-benchmark (its rerun builds a benchmark from the small catalogue)
    Case(
        "build-benchmark-out-is-a-folder",
        "data_gen",
        {"b": FOLDER},
        ["build-benchmark", "--catalogue", str(TRAIN), "--split", "", "--out", "{dir}/b", "--quiet"],
        ("b", "'--out'", "is a folder"),
        fix=Fix(
            argv=[
                "build-benchmark",
                "--catalogue",
                str(TRAIN),
                "--split",
                "",
                "--out",
                "{dir}/b.jsonl",
                "--quiet",
            ]
        ),
    ),
    Case(
        "build-benchmark-out-below-a-file",
        "data_gen",
        {"f": "x"},
        ["build-benchmark", "--catalogue", str(TRAIN), "--split", "", "--out", "{dir}/f/b.jsonl", "--quiet"],
        ("f/b.jsonl", "'--out'", "is a file"),
        fix=Fix(
            argv=[
                "build-benchmark",
                "--catalogue",
                str(TRAIN),
                "--split",
                "",
                "--out",
                "{dir}/b.jsonl",
                "--quiet",
            ]
        ),
    ),
    # --- python -m data_gen build-no-tool-split
    Case(
        "build-no-tool-split-out-is-a-folder",
        "data_gen",
        {"b": FOLDER},
        ["build-no-tool-split", "--catalogue", str(TRAIN), "--split", "", "--seeds", "1", "--out", "{dir}/b"],
        ("b", "'--out'", "is a folder"),
        fix=Fix(
            argv=[
                "build-no-tool-split",
                "--catalogue",
                str(TRAIN),
                "--split",
                "",
                "--seeds",
                "1",
                "--out",
                "{dir}/b.jsonl",
                "--quiet",
            ]
        ),
    ),
    # --- python -m eval: the no-tool split
    Case(
        "eval-no-tool-bench-missing",
        "eval",
        {},
        _run("--no-tool-bench", "{dir}/nope.jsonl"),
        ("nope.jsonl", "no such file", "--no-tool-bench"),
        fix=Fix({"nope.jsonl": NO_TOOL_OK}),
    ),
    Case(
        "eval-no-tool-bench-holds-positive-records",
        "eval",
        {"s.jsonl": BENCH_OK},
        _run("--no-tool-bench", "{dir}/s.jsonl"),
        ("s.jsonl", "record '000000-", "not a retrieval miss"),
        fix=Fix({"s.jsonl": NO_TOOL_OK}),
    ),
    Case(
        "eval-bench-is-a-no-tool-split",
        "eval",
        {"b.jsonl": NO_TOOL_OK},
        _run("--bench", "{dir}/b.jsonl"),
        ("b.jsonl", "record '000000-miss-", "--no-tool-bench"),
        fix=BENCH_FIX,
    ),
    Case(
        "eval-no-tool-limit-0",
        "eval",
        {},
        _run("--no-tool-limit", "0"),
        ("--no-tool-limit", "at least 1"),
        fix=Fix(argv=_run("--no-tool-limit", "1")),
    ),
    # --- python -m eval
    Case(
        "eval-out-below-a-file",
        "eval",
        {"f": "x"},
        _run("--out", "{dir}/f/run"),
        ("f/run", "'--out'", "is a file"),
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-out-under-proc",
        "eval",
        {},
        _run("--out", "/proc/diaforge/run"),
        ("/proc/diaforge/run", "'--out'", "cannot create"),
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-out-under-dev-full",
        "eval",
        {},
        _run("--out", "/dev/full/run"),
        ("/dev/full/run", "'--out'"),
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-device-cuda-without-cuda",
        "eval",
        {},
        ["run", "--model", "{dir}/model", "--device", "cuda", "--out", "{dir}/run"],
        ("--device cuda", "no CUDA GPU", "--device cpu"),
        max_seconds=10,
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-device-bogus",
        "eval",
        {},
        ["run", "--model", "{dir}/model", "--device", "gpu0", "--out", "{dir}/run"],
        ("--device 'gpu0'", "unknown device"),
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-bench-is-dev-zero",
        "eval",
        {},
        _run("--bench", "/dev/zero", "--out", "{dir}/run"),
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix({"b.jsonl": BENCH_OK}, argv=_run("--bench", "{dir}/b.jsonl", "--out", "{dir}/run")),
    ),
    Case(
        "eval-bench-is-a-folder",
        "eval",
        {"b": FOLDER},
        _run("--bench", "{dir}/b", "--out", "{dir}/run"),
        ("b", "directory"),
        fix=Fix({"b.jsonl": BENCH_OK}, argv=_run("--bench", "{dir}/b.jsonl", "--out", "{dir}/run")),
    ),
    Case(
        "eval-user-proxy-bogus",
        "eval",
        {},
        _run("--user-proxy", "bogus", "--modes", "dynamic", "--out", "{dir}/run"),
        ("user proxy", "'bogus'"),
        fix=Fix(argv=_run("--user-proxy", "scripted", "--out", "{dir}/run")),
    ),
    Case(
        "eval-score-missing",
        "eval",
        {},
        ["score", "{dir}/t.jsonl"],
        ("t.jsonl", "not found"),
        fix=Fix(argv=["score", "{dir}/run1"]),
    ),
    Case(
        "eval-compare-same-run-twice",
        "eval",
        {},
        ["compare", "{dir}/run1", "{dir}/run1", "--out", "{dir}/cmp"],
        ("run1", "given twice"),
        fix=Fix(argv=["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp"]),
    ),
    Case(
        "eval-compare-out-is-a-file",
        "eval",
        {"f": "x"},
        ["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/f"],
        ("f", "'--out'", "not a folder"),
        fix=Fix(argv=["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp"]),
    ),
    Case(
        "eval-compare-json-is-a-folder",
        "eval",
        {"j": FOLDER},
        ["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp", "--json", "{dir}/j"],
        ("j", "'--json'", "is a folder"),
        fix=Fix(argv=["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp", "--json", "{dir}/j.json"]),
    ),
    Case(
        "eval-import-out-is-a-folder",
        "eval",
        {"o": FOLDER},
        ["import", "tooldial", str(ROOT / "tests/fixtures/peers/tooldial/test.json"), "--out", "{dir}/o"],
        ("o", "'--out'", "is a folder"),
        fix=Fix(
            argv=[
                "import",
                "tooldial",
                str(ROOT / "tests/fixtures/peers/tooldial/test.json"),
                "--out",
                "{dir}/o.jsonl",
            ]
        ),
    ),
    # --- train/sft.py: recipes
    Case(
        "recipe-duplicate-key",
        "train",
        {"r.yaml": RECIPE_OK + "learning_rate: 1.0e-3\nlearning_rate: 2.0e-3\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "line 6", "'learning_rate'", "duplicate key", "line 5"),
        fix=Fix({"r.yaml": RECIPE_OK + "learning_rate: 2.0e-3\n"}),
    ),
    Case(
        "recipe-lora-target-modules-42",
        "train",
        {"r.yaml": RECIPE_OK + "lora_target_modules: 42\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "lora_target_modules", "got 42"),
        fix=Fix({"r.yaml": RECIPE_OK + "lora_target_modules: all-linear\n"}),
    ),
    Case(
        "recipe-lora-modules-to-save-number",
        "train",
        {"r.yaml": RECIPE_OK + "lora_modules_to_save: [1]\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "lora_modules_to_save"),
        fix=Fix({"r.yaml": RECIPE_OK + "lora_modules_to_save: [lm_head]\n"}),
    ),
    Case(
        "recipe-save-steps-0",
        "train",
        {"r.yaml": RECIPE_OK + "save_strategy: steps\nsave_steps: 0\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "save_steps", "greater than 0"),
        fix=Fix({"r.yaml": RECIPE_OK + "save_strategy: steps\nsave_steps: 10\n"}),
    ),
    Case(
        "recipe-eval-steps-0",
        "train",
        {"r.yaml": RECIPE_OK + "eval_steps: 0\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "eval_steps", "greater than 0"),
        fix=Fix({"r.yaml": RECIPE_OK + "eval_steps: 10\n"}),
    ),
    Case(
        "recipe-max-length-negative",
        "train",
        {"r.yaml": RECIPE_OK + "max_length: -5\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "max_length", "greater than 0"),
        fix=Fix({"r.yaml": RECIPE_OK + "max_length: 2048\n"}),
    ),
    Case(
        "recipe-logging-steps-negative",
        "train",
        {"r.yaml": RECIPE_OK + "logging_steps: -1\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "logging_steps", "0 or more"),
        fix=Fix({"r.yaml": RECIPE_OK + "logging_steps: 5\n"}),
    ),
    Case(
        "recipe-system-prompt-not-utf8",
        "train",
        {"s.txt": b"caf\xe9", "r.yaml": RECIPE_OK + "system_prompt_file: {dir}/s.txt\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "system_prompt_file", "s.txt", "not UTF-8"),
        fix=Fix({"s.txt": "You pick tools.\n"}),
    ),
    Case(
        "recipe-system-prompt-missing",
        "train",
        {"r.yaml": RECIPE_OK + "system_prompt_file: {dir}/s.txt\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "system_prompt_file", "s.txt", "not found"),
        fix=Fix({"s.txt": "You pick tools.\n"}),
    ),
    Case(
        "recipe-dataset-is-a-folder",
        "train",
        {"r.yaml": _recipe("{dir}")},
        ["{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "is a folder", "dialogues.jsonl"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-dataset-is-dev-zero",
        "train",
        {"r.yaml": _recipe("/dev/zero")},
        ["{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "/dev/zero", "not a regular file"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-is-dev-zero",
        "train",
        {},
        ["/dev/zero"],
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix({"r.yaml": RECIPE_OK}, argv=["{dir}/r.yaml"]),
    ),
    Case(
        "recipe-output-dir-under-proc",
        "train",
        {"r.yaml": RECIPE_OK.replace("{dir}/sft", "/proc/diaforge/sft")},
        ["{dir}/r.yaml"],
        ("r.yaml", "/proc/diaforge/sft", "'output_dir'", "cannot create"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-output-dir-below-a-file",
        "train",
        {"f": "x", "r.yaml": RECIPE_OK.replace("{dir}/sft", "{dir}/f/sft")},
        ["{dir}/r.yaml"],
        ("r.yaml", "f/sft", "'output_dir'", "is a file"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-output-dir-is-a-file",
        "train",
        {"f": "x", "r.yaml": RECIPE_OK.replace("{dir}/sft", "{dir}/f")},
        ["{dir}/r.yaml"],
        ("r.yaml", "'output_dir'", "not a folder"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-model-is-an-adapter",
        "train",
        {"ad/adapter_config.json": ADAPTER, "r.yaml": RECIPE_OK.replace("tiny://llama", "{dir}/ad")},
        ["{dir}/r.yaml"],
        (
            "r.yaml",
            "model_name_or_path",
            "LoRA adapter",
            "HuggingFaceTB/SmolLM2-135M-Instruct",
            "train.merge",
        ),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-override-duplicate-of-a-bad-value",
        "train",
        {"r.yaml": RECIPE_OK},
        ["{dir}/r.yaml", "--max_length", "0"],
        ("r.yaml", "max_length", "greater than 0"),
        fix=Fix(argv=["{dir}/r.yaml", "--max_length", "1024"]),
    ),
    # --- python -m train.launch (diaforge train)
    Case(
        "launch-config-file-missing",
        "launch",
        {"r.yaml": RECIPE_OK},
        ["--config_file", "{dir}/nope.yaml", "train/sft.py", "{dir}/r.yaml"],
        ("--config_file", "nope.yaml", "the bundled ones", "cpu"),
        fix=Fix(argv=["--config_file", "cpu", "train/sft.py", "{dir}/r.yaml"]),
    ),
    Case(
        "launch-recipe-duplicate-key",
        "launch",
        {"r.yaml": RECIPE_OK + "seed: 1\nseed: 2\n"},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "'seed'", "duplicate key"),
        fix=Fix({"r.yaml": RECIPE_OK + "seed: 2\n"}),
    ),
    Case(
        "launch-output-dir-under-proc",
        "launch",
        {"r.yaml": RECIPE_OK.replace("{dir}/sft", "/proc/diaforge/sft")},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "'output_dir'", "cannot create"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "launch-lora-target-modules-42",
        "launch",
        {"r.yaml": RECIPE_OK + "lora_target_modules: 42\n"},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "lora_target_modules"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "launch-recipe-only-dataset-folder",
        "launch",
        {"r.yaml": _recipe("{dir}")},
        ["--config_file", "cpu", "{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "is a folder"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    # --- python -m bench.run (diaforge bench): the rerun parses the command line only
    Case(
        "bench-out-is-a-folder",
        "bench",
        {"o": FOLDER},
        ["--only", "token_ratio", "--out", "{dir}/o"],
        ("o", "'--out'", "is a folder"),
        fix=Fix(argv=["--only", "token_ratio", "--out", "{dir}/o.json"]),
    ),
    Case(
        "bench-out-under-dev-full",
        "bench",
        {},
        ["--only", "token_ratio", "--out", "/dev/full/r.json"],
        ("'--out'", "/dev/full"),
        fix=Fix(argv=["--only", "token_ratio", "--out", "{dir}/r.json"]),
    ),
    Case(
        "bench-unknown-part",
        "bench",
        {},
        ["--only", "speed", "--out", "{dir}/r.json"],
        ("unknown part", "speed"),
        fix=Fix(argv=["--only", "token_ratio", "--out", "{dir}/r.json"]),
    ),
]


def _main(command: str) -> Callable[[list[str]], int]:
    if command == "data_gen":
        from data_gen.cli import main
    elif command == "eval":
        from eval.cli import main
    elif command == "launch":
        from train.launch import main
    elif command == "bench":
        from bench.run import main
    else:
        from train.sft import main
    return main


def _snapshot(folder: Path) -> dict[str, str]:
    """Every path under `folder` with its content's digest (folders: "")."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        for p in folder.rglob("*")
    }


def _write(folder: Path, files: dict[str, bytes | str | None]) -> None:
    for name, content in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if content is FOLDER:
            target.mkdir(exist_ok=True)
        elif isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content.replace("{dir}", str(folder)), encoding="utf-8")


def _fast_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """TF-IDF wherever an encoder is asked for: the reruns stay quick and need no MiniLM."""
    import data_gen.personas
    import data_gen.seed_engine
    import diaforge.similarity

    def tfidf(name: str = "auto") -> object:
        return diaforge.similarity.TfidfEncoder()

    for module in (diaforge.similarity, data_gen.seed_engine, data_gen.personas):
        monkeypatch.setattr(module, "get_encoder", tfidf)


def _eval_runs(folder: Path) -> None:
    """Two small evaluation runs for the compare and score cases."""
    from eval.cli import main

    for name, seed in (("run1", "0"), ("run2", "1")):
        code = main(
            [
                "run",
                "--backend",
                "random",
                "--limit",
                "1",
                "--modes",
                "static",
                "--quiet",
                "--seed",
                seed,
                "--no-tool-limit",
                "1",
                "--out",
                str(folder / name),
            ]
        )
        assert code == 0


def _quick(command: str, argv: list[str]) -> list[str]:
    """A rerun's command line made quick: one dialogue, no plots or exports, no bars."""
    if command == "data_gen" and argv[0] == "generate":
        argv = [*argv, "--num-dialogues", "1", "--no-plots", "--no-export", "--quiet"]
        return argv if "--out" in argv else [*argv, "--out", "{dir}/rerun"]
    if command == "eval" and argv[0] == "run":
        argv = [*argv, "--limit", "1", "--modes", "static", "--quiet"]
        argv = argv if "--no-tool-limit" in argv else [*argv, "--no-tool-limit", "1"]
        return argv if "--out" in argv else [*argv, "--out", "{dir}/rerun"]
    return argv


def _rerun(case: Case, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The case with its fix applied: the door passes (see the module docstring)."""
    fix = case.fix
    assert fix is not None, f"{case.id}: no fix"
    for name in fix.remove:
        (folder / name).unlink()
    _write(folder, fix.files)
    argv = [a.replace("{dir}", str(folder)) for a in _quick(case.command, fix.argv or case.argv)]
    if case.command == "bench":
        from bench.run import parse_args

        parse_args(argv)
        return
    if case.command in ("train", "launch"):
        import accelerate.commands.launch

        import train.sft

        launched: list[object] = []
        monkeypatch.setattr(accelerate.commands.launch, "launch_command", launched.append)
        from train.launch import main

        assert main(argv if case.command == "launch" else [*LAUNCH, *argv]) == 0
        assert launched, "the launcher was not reached"
        if case.command == "train":  # what train/sft.py checks before it loads a model
            args = train.sft.parse(argv)[0]
            train.sft.load_data(args)
        return
    assert _main(case.command)(argv) == 0, f"{case.id}: the fixed rerun failed"


def test_the_table_is_large_and_every_case_has_a_fix() -> None:
    assert len(CASES) >= 120, len(CASES)
    assert len({c.id for c in CASES}) == len(CASES)
    assert all(c.fix is not None for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.command}:{c.id}" for c in CASES])
def test_bad_input(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.delenv("DIAFORGE_DEBUG", raising=False)
    _fast_encoder(monkeypatch)
    uses_runs = any("{dir}/run1" in a for a in [*case.argv, *((case.fix.argv or []) if case.fix else [])])
    if uses_runs:
        _eval_runs(tmp_path)
    _write(tmp_path, case.files)
    capsys.readouterr()
    before = _snapshot(tmp_path)
    argv = [a.replace("{dir}", str(tmp_path)) for a in case.argv]
    started = time.perf_counter()
    try:
        code = _main(case.command)(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    seconds = time.perf_counter() - started
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("[diaforge]")]
    assert code == 2, err
    assert "Traceback" not in err, err
    assert len(lines) == 1, err
    for needle in case.needles:
        assert needle in lines[0], (needle, lines[0])
    if case.max_seconds is not None:
        assert seconds < case.max_seconds, f"{seconds:.2f}s"
    # Nothing half-written: no new file or folder, and every file there before is as it was.
    assert _snapshot(tmp_path) == before
    _rerun(case, tmp_path, monkeypatch)


@pytest.mark.parametrize(
    ("where", "files", "needles"),
    [
        # caught by the launcher before any process starts
        ("launcher", {"r.yaml": "num_train_epochs: -3\n"}, ("r.yaml", "num_train_epochs")),
        # caught by train/sft.py in the process accelerate started: its exit code comes through
        (
            "script",
            {"d.jsonl": _dialogue_calling_unoffered_tool(), "r.yaml": _recipe("{dir}/d.jsonl")},
            ("d.jsonl", "launch_rocket", "candidate_tools"),
        ),
    ],
)
def test_sft_error_under_accelerate_launch_is_one_line(
    tmp_path: Path, where: str, files: dict[str, str], needles: tuple[str, ...]
) -> None:
    """The real launcher in a subprocess: exit 2, one line, no accelerate traceback. (Plain
    `accelerate launch` raises its own CalledProcessError whatever the script exits with.)"""
    for name, content in files.items():
        (tmp_path / name).write_text(content.replace("{dir}", str(tmp_path)), encoding="utf-8")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "OMP_NUM_THREADS": "1",  # as `make demo` sets it: accelerate warns about defaults otherwise
        "PYTHONPATH": str(ROOT),
    }
    env.pop("DIAFORGE_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "train.launch", *LAUNCH, str(tmp_path / "r.yaml")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("[diaforge]")]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 1, proc.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    # no output folder, nothing half-written
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files)


def test_plain_accelerate_launch_prints_our_line_first(tmp_path: Path) -> None:
    """The README's plain `accelerate launch ... train/sft.py BAD.yaml`: accelerate adds its own
    traceback after the script fails (whatever the script exits with), but the first line is ours.
    `diaforge train` (python -m train.launch) prints that line alone: the test above."""
    (tmp_path / "r.yaml").write_text("num_train_epochs: -3\n", encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1"}
    env.pop("DIAFORGE_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.launch", *LAUNCH, str(tmp_path / "r.yaml")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode != 0
    assert lines and lines[0].startswith("error: ") and "num_train_epochs" in lines[0], proc.stderr[-2000:]


def test_a_60_mb_catalogue_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25: a 60 MB catalogue took 139 s and 14 GB of RSS. It is refused before it is read,
    naming the limit and the way around it; so is a small file of more tools than the limit."""
    from data_gen.catalogue import MAX_TOOLS
    from data_gen.cli import main

    tools = json.loads(CAT_OK)
    big = tmp_path / "big.json"
    with big.open("w", encoding="utf-8") as fh:
        fh.write("[")
        i, size = 0, 0
        while size < 60 * 1024 * 1024:
            text = json.dumps({**tools[i % len(tools)], "name": f"tool_{i}"})
            fh.write(("," if i else "") + text)
            size += len(text) + 1
            i += 1
        fh.write("]")
    started = time.perf_counter()
    assert main(["analyze", "--catalogue", str(big), "--encoder", "tfidf"]) == 2
    assert time.perf_counter() - started < 5
    line = capsys.readouterr().err.strip()
    assert "big.json" in line and "over the limit" in line and "split it" in line, line
    many = tmp_path / "many.jsonl"
    many.write_text(
        "".join(json.dumps({"name": f"t{i}"}) + "\n" for i in range(MAX_TOOLS + 1)), encoding="utf-8"
    )
    assert main(["analyze", "--catalogue", str(many), "--encoder", "tfidf"]) == 2
    line = capsys.readouterr().err.strip()
    assert "many.jsonl" in line and f"{MAX_TOOLS + 1:,} tools" in line and "split it" in line, line
