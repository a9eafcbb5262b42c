"""A real OpenAI-compatible server in the loop: `transformers serve` on 127.0.0.1 with the
materialised SmolLM2-135M-Instruct, driven by `generate --backend openai` (every role) and
`eval run --backend openai`. Reports the requests served and the incompatibilities found
(streaming, /v1/models, usage fields, stop sequences) in `real_server_report.json` next to the run.

Needs fastapi and uvicorn (`transformers serve`); skipped with the reason when they are missing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.llm.smollm2 import DEFAULT_SMOLLM2_DIR, is_materialised, materialise_smollm2

pytestmark = [pytest.mark.slow, pytest.mark.real_server]

TRAIN = ROOT / "data_gen" / "assets" / "catalogue_train.json"
STARTUP_TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - loopback only
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


class ServedModel:
    def __init__(self, model: Path, port: int, log: Path, proc: subprocess.Popen) -> None:
        self.model, self.port, self.log, self.proc = str(model), port, log, proc
        self.base_url = f"http://127.0.0.1:{port}/v1"

    def chat_requests(self) -> int:
        """Chat completions the server answered (its access log)."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return len(re.findall(r'"POST /v1/chat/completions HTTP/1\.1" 200', text))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedModel]:
    missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"`transformers serve` needs {', '.join(missing)} (pip install -e '.[serve]')")
    cached = ROOT / DEFAULT_SMOLLM2_DIR
    model = (
        cached if is_materialised(cached) else materialise_smollm2(tmp_path_factory.mktemp("m") / "SmolLM2")
    )
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    cli = Path(sys.executable).parent / "transformers"
    cmd = [str(cli), "serve", "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    cmd += ["--log-level", "info", "--default-seed", "0", str(model)]
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
            with contextlib.suppress(OSError):
                if _get(f"http://127.0.0.1:{port}/health", timeout=2)[0] == 200:
                    break
            time.sleep(0.5)
        else:
            pytest.fail(f"transformers serve not healthy after {STARTUP_TIMEOUT_S}s")
        yield ServedModel(model, port, log, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _compatibility(served: ServedModel) -> dict[str, object]:
    """What of the OpenAI API the server does differently from OpenAI."""
    import openai

    found: dict[str, object] = {}
    status, body = _get(f"{served.base_url}/models", timeout=30)
    found["models_endpoint"] = "ok" if status == 200 else f"HTTP {status}: {body[:80]}"
    client = openai.OpenAI(base_url=served.base_url, api_key="sk-local", max_retries=0, timeout=120)
    messages = [{"role": "user", "content": "Name three colours, separated by commas."}]
    plain = client.chat.completions.create(
        model=served.model, messages=messages, max_tokens=24, temperature=0
    )
    text = plain.choices[0].message.content or ""
    usage = plain.usage
    found["usage"] = (
        "ok"
        if usage is not None and usage.prompt_tokens > 0 and usage.completion_tokens > 0
        else f"missing or zero: {usage}"
    )
    found["finish_reason"] = plain.choices[0].finish_reason
    words = re.findall(r"[A-Za-z]{3,}", text)
    if len(words) >= 2:
        stop = words[1]
        stopped = client.chat.completions.create(
            model=served.model, messages=messages, max_tokens=24, temperature=0, stop=[stop]
        )
        got = stopped.choices[0].message.content or ""
        found["stop"] = "ok" if stop not in got else f"stop string {stop!r} kept in the reply: {got!r}"
    chunks = list(
        client.chat.completions.create(
            model=served.model, messages=messages, max_tokens=16, temperature=0, stream=True
        )
    )
    streamed = "".join((c.choices[0].delta.content or "") for c in chunks if c.choices)
    found["streaming"] = "ok" if len(chunks) > 1 and streamed else f"{len(chunks)} chunks, text {streamed!r}"
    return found


def test_generate_and_eval_against_transformers_serve(served: ServedModel, tmp_path: Path) -> None:
    started = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OPENAI_API_KEY", None)
    config = tmp_path / "gen.yaml"
    roles = {r: {"max_tokens": 48, "timeout": 300, "max_retries": 1} for r in ("user", "values", "goal")}
    roles.update(
        {
            r: {"max_tokens": 64, "timeout": 300, "max_retries": 1}
            for r in ("assistant", "relevancy", "critique")
        }
    )
    config.write_text(
        json.dumps(
            {
                "catalogue": str(TRAIN),
                "out": str(tmp_path / "gen"),
                "num_dialogues": 2,
                "t_max": 2,
                "max_attempts": 1,
                "concurrency": 2,
                "encoder": "tfidf",
                "backend": "openai",
                "model": served.model,
                "base_url": served.base_url,
                "roles": roles,
                "plots": False,
                "export": False,
            }
        ),
        encoding="utf-8",
    )
    gen = subprocess.run(
        [sys.executable, "-m", "diaforge.data_gen", "generate", "--config", str(config), "--quiet"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert gen.returncode == 0, gen.stderr[-3000:]
    after_generate = served.chat_requests()
    out = tmp_path / "gen"
    run = json.loads((out / "run.json").read_text())
    rejects = [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines() if x.strip()]
    accepted = [x for x in (out / "dialogues.jsonl").read_text().splitlines() if x.strip()]
    assert len(accepted) + sum(1 for r in rejects if r["final"]) == 2, "every seed ended"
    assert all(r["reason"] for r in rejects)
    counted = run["usage"]["total"]
    assert (
        counted["requests"] >= after_generate > 0
        or counted["requests"] + counted["retries"] >= after_generate
    )
    assert counted["prompt_tokens"] > 0

    ev = subprocess.run(
        [
            sys.executable, "-m", "diaforge.eval", "run", "--backend", "openai", "--model", served.model,
            "--base-url", served.base_url, "--limit", "2", "--t-max", "2", "--max-new-tokens", "48",
            "--no-tool-bench", "none",  # the 20 retrieval misses would make this a CPU throughput test
            "--out", str(tmp_path / "eval"), "--quiet",
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert ev.returncode == 0, ev.stderr[-3000:]
    transcripts = (tmp_path / "eval" / "transcripts.jsonl").read_text().splitlines()
    assert transcripts, "eval wrote its transcripts"
    total_requests = served.chat_requests()
    compat = _compatibility(served)
    report = {
        "seconds": round(time.monotonic() - started, 1),
        "chat_requests_served": {"generate": after_generate, "eval": total_requests - after_generate},
        "generate": {
            "accepted": len(accepted),
            "reject_stages": [r["stage"] for r in rejects],
            "usage": counted,
        },
        "eval_transcripts": len(transcripts),
        "compatibility": compat,
    }
    (tmp_path / "real_server_report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print("\nreal server:", json.dumps(report))
    assert total_requests > after_generate
