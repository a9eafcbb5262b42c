"""`diaforge serve` as a user starts it: a process on 127.0.0.1 serving the materialised SmolLM2, the
real OpenAI client against it, and ``eval run --backend openai`` through it equal to ``eval run
--backend hf`` on 8 held-out dialogues, static and dynamic, with every aid on and with none."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _repo import ROOT

from diaforge.llm.smollm2 import DEFAULT_SMOLLM2_DIR, is_materialised, materialise_smollm2

pytestmark = pytest.mark.slow(reason="serves SmolLM2 from another process")

STARTUP_TIMEOUT_S = 180
AIDS = ("--constrain-calls", "--ground-values", "--copy-thoughts")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cached = ROOT / DEFAULT_SMOLLM2_DIR
    return (
        cached if is_materialised(cached) else materialise_smollm2(tmp_path_factory.mktemp("m") / "SmolLM2")
    )


@pytest.fixture(scope="module")
def server(smollm2: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``diaforge serve`` on a free port; its base URL. Its default decoding is every aid on: a
    request that asks none must get none."""
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2"}
    cmd = [sys.executable, "-m", "diaforge", "serve", str(smollm2), "--port", str(port)]
    cmd += ["--served-model-name", "smol", *(x for flag in AIDS for x in (flag, "on"))]
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"diaforge serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2),
            ):
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"diaforge serve not healthy after {STARTUP_TIMEOUT_S}s")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_the_openai_client_against_the_served_model(server: str) -> None:
    import openai

    from diaforge.format import openai_tools
    from diaforge.schema import load_dialogues

    dialogue = load_dialogues(ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl")[0]
    client = openai.OpenAI(base_url=server, api_key="sk-local", max_retries=0, timeout=300)
    messages = [{"role": "user", "content": dialogue.turns[0].content}]
    tools = openai_tools(dialogue.candidate_tools)
    reply = client.chat.completions.create(
        model="smol", messages=messages, tools=tools, max_tokens=96, temperature=0
    )
    choice = reply.choices[0]
    assert choice.finish_reason in ("tool_calls", "stop", "length", "loop")
    names = {t.name for t in dialogue.candidate_tools}
    for call in choice.message.tool_calls or []:
        assert call.function.name in names and isinstance(json.loads(call.function.arguments), dict)
    echo = reply.model_extra["diaforge"]
    assert echo["executor"] == "diaforge-serve" and echo["decoding"]["constrain_calls"] is True
    streamed = client.chat.completions.create(
        model="smol", messages=messages, tools=tools, max_tokens=96, temperature=0, stream=True
    )
    finals = [c for c in streamed if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finals] == [choice.finish_reason]
    assert finals[0].model_extra["diaforge"]["text"] == echo["text"]


def _eval(*args: str) -> dict[str, Any]:
    from diaforge.eval.cli import main

    assert main(["run", *args]) == 0
    out = Path(args[args.index("--out") + 1])
    transcripts = [json.loads(line) for line in (out / "transcripts.jsonl").read_text().splitlines()]
    for t in transcripts:
        t.pop("model")
    return {"metrics": json.loads((out / "metrics.json").read_text()), "transcripts": transcripts}


@pytest.mark.parametrize("aids", ["on", "off"])
def test_eval_through_the_server_equals_eval_on_the_model(
    server: str, smollm2: Path, tmp_path: Path, aids: str
) -> None:
    common = ["--limit", "8", "--max-new-tokens", "96", "--batch-size", "8", "--t-max", "3"]
    common += ["--no-tool-bench", "none", "--quiet", *(x for flag in AIDS for x in (flag, aids))]
    local = _eval("--model", str(smollm2), "--out", str(tmp_path / "hf"), *common)
    served = _eval(
        "--backend", "openai", "--model", "smol", "--base-url", server,
        "--out", str(tmp_path / "served"), *common,
    )  # fmt: skip
    assert served["transcripts"] == local["transcripts"]
    identity = {"backend", "checkpoint", "training", "seconds", "no_tool_seconds", "wall_seconds", "model"}
    identity |= {"peak_rss_mb"}
    a, b = ({k: v for k, v in r["metrics"].items() if k not in identity} for r in (local, served))
    da, db = a.pop("decoding"), b.pop("decoding")
    assert a == b
    assert (da.pop("executor"), db.pop("executor")) == ("hf", "diaforge-serve")
    da.pop("prefix_cache"), db.pop("prefix_cache")
    assert da == db
