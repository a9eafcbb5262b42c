"""Nothing lost, everything counted: damaged replies cost one seed, never the run; every token the
server served is counted, failed attempts included; reruns and resumes just work."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.bench.fake_server import FaultyOpenAIServer
from diaforge.data_gen.engine import generate
from diaforge.data_gen.gen_config import GenerationConfig, RoleSpec, load_config
from diaforge.errors import InputError
from diaforge.hygiene import json_problem, load_json, load_yaml, repair_text, repair_value
from diaforge.jsonl import JsonlAppender, UnsavableRecord, dump_record, iter_jsonl, write_jsonl
from diaforge.llm.base import BackendError
from diaforge.llm.openai_backend import OpenAIBackend
from diaforge.schema import Dialogue

TRAIN = ROOT / "data_gen" / "assets" / "catalogue_train.json"
ROLES = ("user", "assistant", "values", "goal", "relevancy", "critique")


# --------------------------------------------------------------------------------------------
# Text hygiene
# --------------------------------------------------------------------------------------------


def test_repair_keeps_pairs_and_replaces_lone_halves() -> None:
    assert repair_text("plain") == ("plain", 0)
    assert repair_text("a\ud83d b \ud83d\ude00 \ude00") == ("a\ufffd b \U0001f600 \ufffd", 2)
    value, n = repair_value({"k\ud800": ["x\udfff", {"y": 1.5}]})
    assert value == {"k\ufffd": ["x\ufffd", {"y": 1.5}]} and n == 2


def test_json_problem_names_the_field() -> None:
    assert json_problem({"a": [1, {"b": "ok"}]}) is None
    assert json_problem({"a": [1, {"b": float("inf")}]})[0] == "a[1].b"
    assert "surrogate" in json_problem({"a": "\ud83d"})[1]
    deep: list = []
    node = deep
    for _ in range(300):
        node.append([])
        node = node[0]
    assert "nested deeper" in json_problem({"args": deep})[1]
    with pytest.raises(InputError, match="nested deeper"):
        load_json("[" * 100_000)
    with pytest.raises(InputError, match="not a finite number"):
        load_json('{"x": 1e999}')


def test_records_json_cannot_hold_are_refused_not_saved_as_null(tmp_path: Path) -> None:
    with pytest.raises(UnsavableRecord, match="finite"):
        dump_record({"gold_args": {"amount": float("inf")}})
    target = tmp_path / "out.jsonl"
    with pytest.raises(UnsavableRecord):
        write_jsonl(target, [{"a": 1}, {"b": float("nan")}])
    assert not target.exists() and not list(tmp_path.iterdir()), "nothing half-written"


def test_alias_bomb_refused_fast() -> None:
    bomb = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for name in "bcdefghi":
        bomb += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = name
    assert len(bomb) < 400
    started = time.perf_counter()
    with pytest.raises(InputError, match="alias bomb"):
        load_yaml(bomb, path="bomb.yaml")
    assert time.perf_counter() - started < 1.0
    # Ordinary anchors still work.
    assert load_yaml("base: &b {x: 1}\nother: *b\n") == {"base": {"x": 1}, "other": {"x": 1}}
    with pytest.raises(InputError, match="recursive"):
        load_yaml("a: &a [*a]\n")


def test_complete_last_record_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}', encoding="utf-8")
    with JsonlAppender(path) as out:
        out.write({"a": 3})
    assert [json.loads(x)["a"] for x in path.read_text().splitlines()] == [1, 2, 3]
    path.write_text('{"a": 1}\n{"a": 2', encoding="utf-8")  # cut by a crash: dropped
    with JsonlAppender(path) as out:
        out.write({"a": 3})
    assert [json.loads(x)["a"] for x in path.read_text().splitlines()] == [1, 3]


def test_non_utf8_and_surrogate_records_are_located(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"id": "x"}\n{"id": "\xff"}\n')
    with pytest.raises(InputError, match=r"d.jsonl, line 2: not UTF-8 text: byte 0xff"):
        list(iter_jsonl(path, Dialogue))
    path.write_text('{"id": "\\ud83d"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"line 1, field 'id': invalid Unicode"):
        list(iter_jsonl(path, Dialogue))


# --------------------------------------------------------------------------------------------
# The openai backend: malformed 200 replies are retried, surrogates repaired, usage counted
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["no_choices", "garbage"])
def test_malformed_200_is_retried_and_counted(kind: str) -> None:
    async def go(server: FaultyOpenAIServer) -> tuple[str, object]:
        backend = OpenAIBackend("test-model", base_url=server.base_url, backoff_base=0.0, max_retries=2)
        try:
            r = await backend.chat([{"role": "user", "content": "one two three"}])
        finally:
            await backend.aclose()
        return r, backend.usage

    with FaultyOpenAIServer(fault_plan={0: kind}) as server:
        result, usage = asyncio.run(go(server))
        served = server.stats.prompt_tokens + server.stats.completion_tokens
    assert result.text == "echo: one two three"
    assert usage.retries == 1 and usage.requests == 1
    assert usage.total_tokens == served  # the malformed reply's usage is counted too


def test_malformed_for_good_is_a_backend_error_carrying_its_usage() -> None:
    async def go(server: FaultyOpenAIServer) -> BackendError:
        backend = OpenAIBackend("test-model", base_url=server.base_url, backoff_base=0.0, max_retries=2)
        try:
            with pytest.raises(BackendError, match="no choices") as info:
                await backend.chat([{"role": "user", "content": "hi"}])
        finally:
            await backend.aclose()
        return info.value

    with FaultyOpenAIServer(fault_plan=lambda i, r: "no_choices") as server:
        exc = asyncio.run(go(server))
        served = server.stats.prompt_tokens + server.stats.completion_tokens
    assert exc.usage.retries == 2 and exc.usage.total_tokens == served > 0


def test_lone_surrogate_reply_is_repaired_and_flagged(tmp_path: Path) -> None:
    async def go(server: FaultyOpenAIServer):
        backend = OpenAIBackend("test-model", base_url=server.base_url, cache=tmp_path / "cache")
        try:
            first = await backend.chat([{"role": "user", "content": "x\ud83d"}], temperature=0)
            again = await backend.chat([{"role": "user", "content": "x\ud83d"}], temperature=0)
        finally:
            await backend.aclose()
        return first, again

    with FaultyOpenAIServer(fault_plan={0: "surrogate"}) as server:
        first, again = asyncio.run(go(server))
        sent = server.received[0]["messages"][0]["content"]
    assert "\ufffd" in first.text and first.repaired and "surrogate" in first.repaired
    assert sent == "x\ufffd", "what we send is valid Unicode too"
    assert again.repaired is None and again.text == "echo: x\ufffd", "a repaired reply is not cached"
    assert again.usage.requests == 1 and again.usage.cached == 0


# --------------------------------------------------------------------------------------------
# A whole generate run under faults: finished, every seed ended, every served token counted
# --------------------------------------------------------------------------------------------


def _responder(request: dict) -> str:
    """Role-playing stand-in for a served model; every fifth teacher reply is garbage."""
    messages = request["messages"]
    system = messages[0]["content"]
    last = messages[-1]["content"]
    if system.startswith("You review"):
        return '{"valid": true, "reason": "looks fine"}'
    if system.startswith("Invent realistic values"):
        return "not json at all"
    if system.startswith("Write the goal"):
        return "I want this done today."
    if system.startswith("You play a person"):
        values = system.split("never invent others): ", 1)[-1].split("\n", 1)[0]
        return "Hello, I have a task for you." if len(messages) <= 2 else f"Here is what I have: {values}"
    if sum(len(m["content"] or "") for m in messages) % 5 == 0:
        return "%%% garbage \x00 ]]] {{{"
    names = re.findall(r'"name": "(\w+)"', system)
    if len(names) > 1:
        pick = next((n for n in names if n.replace("_", " ") in last), names[0])
        return f'<think>The user wants {pick}.</think>\n[{{"name": "{pick}", "args": {{}}}}]'
    found = re.search(r"(\{.*\})", last)
    args = json.loads(found.group(1)) if found else {}
    return "<think>All values known.</think>\n" + json.dumps(
        [{"name": names[0] if names else "x", "args": args}]
    )


def _fault_mix(index: int, request: dict) -> str | None:
    return {3: "429", 5: "500", 7: "no_choices", 8: "garbage", 10: "surrogate"}.get(index % 13)


@pytest.mark.slow(reason="generates a corpus end to end")
def test_fault_run_counts_every_served_token(tmp_path: Path) -> None:
    n = 12
    with FaultyOpenAIServer(_responder, fault_plan=_fault_mix) as server:
        spec = RoleSpec(backend="openai", model="test-model", base_url=server.base_url, max_retries=3)
        cfg = GenerationConfig(
            catalogue=str(TRAIN),
            out=str(tmp_path / "run"),
            num_dialogues=n,
            roles={r: spec for r in ROLES},
            encoder="tfidf",
            concurrency=4,
            plots=False,
            export=False,
            progress=False,
        )
        summary = asyncio.run(generate(cfg))
        stats = server.stats
    out = Path(cfg.out)
    rejects = [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines()]
    dialogues = list(iter_jsonl(out / "dialogues.jsonl", Dialogue))
    ended = sorted(
        [d.provenance.model_extra["seed_index"] for d in dialogues]
        + [r["seed_index"] for r in rejects if r["final"]]
    )
    assert ended == list(range(n)), "the run finished and every seed ended once"
    assert all(r["reason"] for r in rejects)
    assert stats.faults["surrogate"] and stats.faults["no_choices"] and stats.faults["garbage"]
    assert not any("\ufffd" in dump_record(d) for d in dialogues), "no repaired reply is kept"
    served = stats.prompt_tokens + stats.completion_tokens
    run = json.loads((out / "run.json").read_text())
    counted = run["usage"]["total"]["prompt_tokens"] + run["usage"]["total"]["completion_tokens"]
    assert abs(counted - served) <= 0.01 * served, (counted, served)
    assert summary.usage.total_tokens == counted
    assert run["usage"]["rejected"]["prompt_tokens"] > 0
    assert run["usage"]["total"]["retries"] > 0


# --------------------------------------------------------------------------------------------
# Reruns and resume
# --------------------------------------------------------------------------------------------


def test_failed_run_before_any_record_does_not_block_the_fixed_rerun(tmp_path: Path) -> None:
    tiny = tmp_path / "tiny.json"
    tiny.write_text(json.dumps(json.loads(TRAIN.read_text())[:3]), encoding="utf-8")
    out = tmp_path / "run"
    base = dict(out=str(out), num_dialogues=2, encoder="tfidf", plots=False, export=False, progress=False)
    with pytest.raises(InputError, match="k\\+1"):
        asyncio.run(generate(GenerationConfig(catalogue=str(tiny), **base)))
    assert (out / "run.json").exists()
    summary = asyncio.run(generate(GenerationConfig(catalogue=str(TRAIN), **base)))
    assert summary.seeds == 2


def test_resume_refuses_a_changed_encoder(tmp_path: Path) -> None:
    base = dict(
        catalogue=str(TRAIN),
        out=str(tmp_path / "run"),
        num_dialogues=2,
        plots=False,
        export=False,
        progress=False,
    )
    asyncio.run(generate(GenerationConfig(encoder="tfidf", **base)))
    fp = json.loads((tmp_path / "run" / "run.json").read_text())["fingerprint"]
    assert fp["encoder"] == "tfidf" and "persona_top_k" in fp
    with pytest.raises(InputError, match="changed: encoder"):
        asyncio.run(generate(GenerationConfig(encoder="minilm", **base)))


# --------------------------------------------------------------------------------------------
# Config types are checked before anything slow
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "needle"),
    [
        ("concurrency: lots\n", "concurrency", "must be an integer, got 'lots'"),
        ("k: 2.7\n", "k", "must be an integer, got 2.7"),
        ("validators: maybe\n", "validators", "must be true or false"),
        ("roles: {user: {timeout: .inf}}\n", "roles.user.timeout", "not a finite number"),
        ("roles: {user: {max_retries: -1}}\n", "roles.user.max_retries", "must be 0 or more"),
        ("encoder: bert\n", "encoder", "encoder must be one of"),
        ("prices: {m: {input_per_million: cheap}}\n", "prices", "must map a model"),
    ],
)
def test_config_types(tmp_path: Path, text: str, field: str, needle: str) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text(f"catalogue: {TRAIN}\n{text}", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message and needle in message and repr(field) in message, message
