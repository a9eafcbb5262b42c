"""`diaforge.eval.evaluate(EvalConfig(...)) -> EvalResult` from Python, `python -m diaforge.eval run --config FILE`
with flags over its keys, one-line refusals of a bad config, and the explicit `messages` the
peer runners hand to `respond` instead of patching the model."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _repo import ROOT

from diaforge.errors import InputError
from diaforge.eval import EvalConfig, EvalResult, evaluate, load_eval_config
from diaforge.eval.cli import build_parser
from diaforge.eval.cli import main as eval_main
from diaforge.eval.eval_config import EXAMPLE_CONFIG, config_defaults, flag_keys
from diaforge.eval.models import ModelSpec, ModelUnderTest, Reply
from diaforge.eval.transcripts import Transcript
from diaforge.jsonl import write_jsonl
from diaforge.schema import Dialogue, Provenance, load_dialogues

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"


@pytest.fixture(scope="module")
def small_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "bench.jsonl"
    write_jsonl(path, load_dialogues(BENCH)[:3])
    return path


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, small_bench: Path) -> Path:
    from diaforge.train.modeling import build_tiny_model

    texts = [t.content for d in load_dialogues(small_bench) for t in d.turns if t.content]
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", texts=texts, seed=0)


def _policy_config(out: Path, **kw: object) -> EvalConfig:
    base = {"backend": "reference", "limit": 2, "no_tool_bench": "none", "quiet": True, "out": out}
    return EvalConfig(**{**base, **kw})


# --------------------------------------------------------------------------------------------
# evaluate() from Python
# --------------------------------------------------------------------------------------------


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_evaluate_a_reference_policy_from_python(tmp_path: Path) -> None:
    result = evaluate(_policy_config(tmp_path / "run"))
    assert isinstance(result, EvalResult) and result.run_dir == tmp_path / "run"
    assert set(result.modes) == {"static", "dynamic"}
    assert result.modes["static"]["Acc"] == result.modes["dynamic"]["Acc"] == 1.0  # the ceiling
    assert result.modes["dynamic"]["n"] == 2 and result.no_tool is None and result.budget is None
    assert result.anatomy["static"]["n"] == 2
    assert all(isinstance(t, Transcript) for t in result.transcripts) and len(result.transcripts) == 4
    on_disk = json.loads((result.run_dir / "metrics.json").read_text())
    assert on_disk == json.loads(json.dumps(result.metrics))
    assert on_disk["limit"] == 2 and on_disk["backend"] == "reference"
    lines = result.summary_lines()
    # Each rate with its 95 % interval: Acc 2 of 2 is Wilson [0.342, 1.000]; FTR 0, 0 is [0, 0].
    assert lines[0].startswith(
        "static   Acc 1.000 [0.342, 1.000]  FTR 0.000 [0.000, 0.000]  TAR 0.000 [0.000, 0.658]"
    )
    assert lines[0].endswith("n=2") and lines[-1] == f"run folder: {tmp_path / 'run'}"


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_repeat_0_is_the_run_without_repeats(tmp_path: Path) -> None:
    """``repeats=2`` adds a second trial per dynamic dialogue in other words and pass^k; its first
    trial and every number but pass^k are those of the run without repeats."""
    base = {"backend": "name-overlap", "modes": ["dynamic"], "limit": 3}
    once = evaluate(_policy_config(tmp_path / "once", **base))
    twice = evaluate(_policy_config(tmp_path / "twice", **base, repeats=2))
    assert [t.repeat for t in twice.transcripts] == [0, 0, 0, 1, 1, 1]
    first = [t.model_dump() for t in twice.transcripts if t.repeat == 0]
    assert first == [t.model_dump() for t in once.transcripts]
    again = [t for t in twice.transcripts if t.repeat == 1]
    assert any(
        [u.content for u in a.turns if u.role == "user"] != [u.content for u in b.turns if u.role == "user"]
        for a, b in zip(once.transcripts, again, strict=True)
    )  # the user-proxy's wording is drawn anew
    assert once.pass_k is None and "pass_k" not in once.metrics and once.metrics["repeats"] == 1
    assert twice.pass_k == twice.metrics["pass_k"] and twice.pass_k["dynamic"]["trials"] == 2
    moving = {"pass_k", "repeats", "seconds", "wall_seconds", "peak_rss_mb"}  # the process's peak so far
    assert {k: v for k, v in twice.metrics.items() if k not in moving} == {
        k: v for k, v in once.metrics.items() if k not in moving
    }
    assert twice.summary_lines()[:2] == once.summary_lines()[:2]
    assert twice.summary_lines()[2].lstrip().startswith("pass^1 ")


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_evaluate_where_an_event_loop_already_runs(tmp_path: Path) -> None:
    """A notebook runs its own loop: `evaluate` then runs the evaluation on a thread of its own."""

    async def cell() -> EvalResult:
        return evaluate(_policy_config(tmp_path / "run", modes=["static"], limit=1))

    result = asyncio.run(cell())
    assert list(result.modes) == ["static"] and result.modes["static"]["n"] == 1


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_evaluate_a_tiny_hf_model(tiny_model: Path, small_bench: Path, tmp_path: Path) -> None:
    cfg = EvalConfig(
        model=str(tiny_model),
        bench=str(small_bench),
        limit=2,
        t_max=2,
        max_new_tokens=8,
        batch_size=2,
        no_tool_bench="none",
        quiet=True,
        out=str(tmp_path / "run"),
        label="tiny",
    )
    result = evaluate(cfg)
    assert result.budget is not None and result.budget.as_dict()["source"] == "explicit"
    assert result.metrics["checkpoint"]["kind"] == "model" and result.metrics["model"] == "tiny"
    assert result.metrics["max_new_tokens"] == 8 and result.metrics["decoding"]["loop_stop"] is True
    assert result.metrics["decoding"]["executor"] == "hf" and result.metrics["decoding"]["unapplied"] == []
    # What the prefix cache served: the dynamic mode's second turns start with their first turn.
    cache = result.metrics["decoding"]["prefix_cache"]
    assert 0 < cache["reused_tokens"] < cache["prompt_tokens"]
    assert cache["computed_tokens"] == cache["prompt_tokens"] - cache["reused_tokens"]
    assert cache["reuse_share"] == round(cache["reused_tokens"] / cache["prompt_tokens"], 4)
    for mode in ("static", "dynamic"):
        assert result.modes[mode]["n"] == 2
    assert {t.model for t in result.transcripts} == {str(tiny_model)}
    dynamic = [t for t in result.transcripts if t.mode == "dynamic"]
    assert all(len(t.assistant_turns()) <= 2 for t in dynamic)
    written = [json.loads(line) for line in (tmp_path / "run" / "transcripts.jsonl").read_text().splitlines()]
    assert written == [t.model_dump(mode="json") for t in result.transcripts]


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_a_small_cache_bound_is_honoured_and_changes_no_reply(
    tiny_model: Path, small_bench: Path, tmp_path: Path
) -> None:
    """``--cache-gib``: the prefix cache never holds more than its bound, drops entries to stay
    under it, and the replies are those of a run whose cache keeps everything."""

    def run(name: str, gib: float | None) -> EvalResult:
        return evaluate(
            EvalConfig(
                model=str(tiny_model),
                bench=str(small_bench),
                limit=2,
                t_max=2,
                max_new_tokens=8,
                batch_size=2,
                cache_gib=gib,
                no_tool_bench="none",
                quiet=True,
                out=str(tmp_path / name),
            )
        )

    roomy = run("roomy", None)
    kept = roomy.metrics["decoding"]["prefix_cache"]
    assert kept["max_cached_mb"] == 3 * 1024 and kept["evicted_entries"] == 0
    tight = run("tight", kept["peak_cached_mb"] / 2 / 1024)  # half of what the roomy run kept
    bounded = tight.metrics["decoding"]["prefix_cache"]
    assert 0 < bounded["peak_cached_mb"] <= bounded["max_cached_mb"] < kept["peak_cached_mb"]
    assert bounded["evicted_entries"] > 0 and bounded["computed_tokens"] > kept["computed_tokens"]
    replies = [[[t.content for t in tr.turns] for tr in r.transcripts] for r in (roomy, tight)]
    assert replies[0] == replies[1]


def test_ground_values_holds_each_call_to_its_own_dialogues_user_words(
    tiny_model: Path, small_bench: Path
) -> None:
    """`ground_values` reaches the call constraint of every dialogue with what its user said so
    far (and nothing of another dialogue or of the assistant); without `constrain_calls` it is refused."""
    from diaforge.eval.model_spec import model_spec
    from diaforge.llm.constrain import Grounding

    spec, _ = model_spec(EvalConfig(model=str(tiny_model), constrain_calls=True, ground_values=True))
    assert spec.decoding.ground_values and spec.decoding.constrain_calls
    model = ModelUnderTest(spec)
    first, second = load_dialogues(small_bench)[:2]
    prefix = first.model_copy(update={"turns": first.turns[:3]})
    grounding = _rules(model, prefix)["call"].grammar.grounding
    said = [t.content for t in prefix.turns if t.role == "user"]
    assert grounding == Grounding.of(said) and len(said) == 2
    assert second.turns[0].content.casefold() not in grounding.said
    plain, _ = model_spec(EvalConfig(model=str(tiny_model), constrain_calls=True))
    assert _rules(ModelUnderTest(plain), prefix)["call"].grammar.grounding is None
    with pytest.raises(InputError, match="--ground-values on needs --constrain-calls on"):
        model_spec(EvalConfig(model=str(tiny_model), ground_values=True))


def _rules(model: ModelUnderTest, d: Any) -> dict[str, Any]:
    """The decoding rules the hf backend builds for the next turn of `d`, by name, in chain order."""
    chain = model._backend.chain(model.request(d))
    return {} if chain is None else {rule.name: rule for rule in chain.rules}


def test_copy_thoughts_puts_a_thought_rule_before_each_dialogues_call_rule(
    tiny_model: Path, small_bench: Path
) -> None:
    """`copy_thoughts` gives every dialogue a `ThoughtRule` over its own candidates, ahead of its
    call rule, and their counts reach `constraint_stats`; without `constrain_calls` it is refused."""
    from diaforge.eval.model_spec import model_spec
    from diaforge.llm.thought_copy import ThoughtRule

    spec, _ = model_spec(EvalConfig(model=str(tiny_model), constrain_calls=True, copy_thoughts=True))
    assert spec.decoding.copy_thoughts and spec.decoding.constrain_calls
    model = ModelUnderTest(spec)
    first, second = load_dialogues(small_bench)[:2]
    for d in (first, second):
        rules = _rules(model, d)
        assert list(rules) == ["loop_stop", "thought", "call"]
        assert isinstance(rules["thought"], ThoughtRule)
        assert [t.name for t in rules["thought"].copy.listed] == [t.name for t in d.candidate_tools]
        assert set(rules["call"].grammar.tools) == {t.name for t in d.candidate_tools}
    prefix = first.model_copy(update={"turns": [t for t in first.turns if t.role == "user"][:1]})
    asyncio.run(model.respond([prefix]))
    stats = model.constraint_stats
    assert set(stats) == {"constrained_tokens", "deep_scans", "fallbacks", "thought_copies", "copy_fallbacks"}
    assert all(isinstance(n, int) and n >= 0 for n in stats.values())
    plain, _ = model_spec(EvalConfig(model=str(tiny_model), constrain_calls=True))
    assert list(_rules(ModelUnderTest(plain), first)) == ["loop_stop", "call"]
    with pytest.raises(InputError, match="--copy-thoughts on needs --constrain-calls on"):
        model_spec(EvalConfig(model=str(tiny_model), copy_thoughts=True))


@pytest.mark.parametrize("backend", ["vllm"])
def test_a_decoding_aid_another_backend_cannot_apply_is_refused(tiny_model: Path, backend: str) -> None:
    """The aids run inside the hf generator only (`hf`, and `diaforge serve` behind `openai`):
    asked of another backend they are refused in one line that names them, never dropped (the
    spec once kept them for `hf` alone, silently). A served model's are refused once its server
    says it is not diaforge serve (tests/eval/test_serve.py)."""
    from diaforge.eval.model_spec import model_spec

    config = EvalConfig(
        model=str(tiny_model), backend=backend, base_url="http://127.0.0.1:9/v1", constrain_calls=True
    )
    with pytest.raises(InputError, match=rf"^--constrain-calls on: .*the {backend} backend cannot apply it"):
        model_spec(config)
    both = dataclasses.replace(config, copy_thoughts=True, ground_values=True)  # flat keys fold into decoding
    with pytest.raises(InputError, match=r"^--constrain-calls on, --ground-values on, --copy-thoughts on: "):
        model_spec(both)
    spec, _ = model_spec(dataclasses.replace(config, constrain_calls=False))
    assert not spec.decoding.aids()


def test_the_vllm_backend_shows_each_dialogue_its_own_candidates(
    tiny_model: Path, small_bench: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In native mode every dialogue's own candidate tools reach vLLM's chat template (the runner
    once passed the first dialogue's tools to the whole batch). A stand-in `vllm` module records
    the calls."""
    import sys
    import types
    from types import SimpleNamespace

    calls: list[dict] = []

    class LLM:
        def __init__(self, **kwargs: object) -> None:
            pass

        def chat(self, conversations: list, params: object, **kwargs: object) -> list:
            calls.append({"n": len(conversations), "tools": kwargs.get("tools")})
            out = SimpleNamespace(text="Which one do you mean?", finish_reason="stop")
            return [SimpleNamespace(outputs=[out]) for _ in conversations]

    fake = types.ModuleType("vllm")
    fake.LLM, fake.SamplingParams = LLM, lambda **kw: kw
    lora = types.ModuleType("vllm.lora")
    request = types.ModuleType("vllm.lora.request")
    request.LoRARequest = lambda *a: a
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setitem(sys.modules, "vllm.lora", lora)
    monkeypatch.setitem(sys.modules, "vllm.lora.request", request)

    from diaforge.eval.model_spec import model_spec

    spec, _ = model_spec(EvalConfig(model=str(tiny_model), backend="vllm", prompt_mode="native"))
    model = ModelUnderTest(spec)
    dialogues = load_dialogues(small_bench)[:3]
    replies = asyncio.run(model.respond(dialogues))
    assert [r.raw for r in replies] == ["Which one do you mean?"] * 3
    sent = [{t["function"]["name"] for t in c["tools"]} for c in calls]
    wanted = [{t.name for t in d.candidate_tools} for d in dialogues]
    assert sorted(map(sorted, sent)) == sorted(map(sorted, {frozenset(w) for w in wanted}))
    assert sum(c["n"] for c in calls) == 3


def test_respond_takes_explicit_messages(tiny_model: Path, small_bench: Path) -> None:
    """`respond(messages=...)` shows the model those messages instead of its own rendering."""
    model = ModelUnderTest(ModelSpec(model=str(tiny_model), max_new_tokens=6))
    d = load_dialogues(small_bench)[0]
    prefix = d.model_copy(update={"turns": d.turns[:1]})
    own = asyncio.run(model.respond([prefix]))
    same = asyncio.run(model.respond([prefix], messages=[model.messages(prefix)]))
    other = [{"role": "system", "content": "Say a number."}, {"role": "user", "content": "Now."}]
    different = asyncio.run(model.respond([prefix], messages=[other]))
    assert own[0].raw == same[0].raw
    assert different[0].raw != own[0].raw
    with pytest.raises(ValueError, match="message lists"):
        asyncio.run(model.respond([prefix, prefix], messages=[other]))


# --------------------------------------------------------------------------------------------
# python -m diaforge.eval run --config FILE
# --------------------------------------------------------------------------------------------


def test_a_yaml_config_runs_and_a_flag_overrides_its_key(tmp_path: Path) -> None:
    out = tmp_path / "run"
    config = tmp_path / "eval.yaml"
    config.write_text(
        f"backend: reference\nmodes: [static]\nlimit: 3\nseed: 5\nno_tool_bench: none\nquiet: true\nout: {out}\n",
        encoding="utf-8",
    )
    # The console door, from a folder outside the checkout, with the config named relative to it.
    done = subprocess.run(
        [sys.executable, "-m", "diaforge", "eval", "run", "--config", "eval.yaml", "--limit", "1"],
        cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["limit"] == 1 and metrics["static"]["n"] == 1  # the flag won
    assert metrics["modes"] == ["static"] and "dynamic" not in metrics  # the file's keys stand
    assert metrics["seed"] == 5 and metrics["backend"] == "reference"
    assert f"run folder: {out}" in done.stdout


def test_flags_override_keys_only_when_given(tmp_path: Path) -> None:
    config = tmp_path / "eval.yaml"
    config.write_text("seed: 5\nmodes: static\nloop_stop: false\nmax_new_tokens: 64\n", encoding="utf-8")
    parser = build_parser()

    def load(*flags: str) -> EvalConfig:
        args = parser.parse_args(["run", "--config", str(config), *flags])
        return load_eval_config(args.config, **{k: getattr(args, k) for k in flag_keys()})

    kept = load()
    assert (kept.seed, kept.modes, kept.decoding.loop_stop, kept.max_new_tokens) == (5, ["static"], False, 64)
    assert kept.t_max == 10 and kept.backend == "hf"  # neither file nor flag: the defaults
    given = load("--seed", "0", "--modes", "static,dynamic", "--loop-stop", "on", "--max-new-tokens", "auto")
    assert (given.seed, given.modes, given.decoding.loop_stop, given.max_new_tokens) == (
        0,
        ["static", "dynamic"],
        True,
        "auto",
    )


def test_the_shipped_example_config_loads() -> None:
    cfg = load_eval_config(EXAMPLE_CONFIG, model="outputs/models/some-model")
    assert cfg.model == "outputs/models/some-model" and cfg.limit == 40 and cfg.modes == ["static", "dynamic"]
    assert dataclasses.asdict(cfg).keys() == config_defaults().keys()


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        ("backend: reference\nlimits: 3\n", ("unknown key 'limits'", "did you mean 'limit'")),
        ("backend: reference\nflavour: mild\n", ("unknown key 'flavour'",)),
        ("limit: 0\n", ("field 'limit'", "at least 1")),
        ("quiet: 1\n", ("field 'quiet'", "true or false")),
        ("modes: [static, sideways]\n", ("field 'modes'", "'sideways'")),
        ("- just\n- a list\n", ("must be a mapping",)),
    ],
    ids=["near-key", "unknown-key", "limit-0", "quiet-1", "bad-mode", "not-a-mapping"],
)
def test_a_bad_config_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], yaml: str, expected: tuple[str, ...]
) -> None:
    config = tmp_path / "eval.yaml"
    config.write_text(yaml, encoding="utf-8")
    assert eval_main(["run", "--config", str(config), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: {config}")
    for part in expected:
        assert part in err
    assert not (tmp_path / "run").exists()  # refused before anything was written


@pytest.mark.parametrize(
    "argv", [["run", "--backend", "random", "--mode", "native"], ["bfcl", "--model", "m", "--mode", "native"]]
)
def test_the_old_mode_alias_is_an_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """``--mode`` was a hidden alias of ``--prompt-mode``; it is gone (``--prompt-mode`` it is)."""
    with pytest.raises(SystemExit) as stop:
        eval_main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: python -m diaforge.eval")
    assert "unrecognized arguments: --mode native" in err  # neither an alias nor --model/--modes abbreviated


# --------------------------------------------------------------------------------------------
# The peers hand their own messages to respond(messages=...)
# --------------------------------------------------------------------------------------------


class _Recorder:
    """Stands for `ModelUnderTest`: records the `messages` each `respond` call was given."""

    label = "recorder"

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[list[list[dict]] | None] = []

    def messages(self, d: Dialogue) -> list[dict]:
        return [
            {"role": "system", "content": "our prompt"},
            *({"role": t.role, "content": t.content} for t in d.turns),
        ]

    async def respond(self, dialogues: list, messages: list | None = None) -> list[Reply]:
        from diaforge.format import parse_assistant

        self.calls.append(messages)
        return [Reply(parse_assistant(self.text), self.text) for _ in dialogues]


def test_next_action_label_mode_passes_its_prompt_as_messages() -> None:
    from diaforge.eval.peers.next_action import build_examples, label_messages, run_next_action

    bench = load_dialogues(BENCH)[:2]
    model = _Recorder("Action: request")
    before = dict(vars(model))
    asyncio.run(run_next_action(model, bench, method="label", progress=False))
    prefixes = [ex.prefix for ex in build_examples(bench)]
    assert model.calls == [[label_messages(p) for p in prefixes]]
    assert vars(model).keys() == before.keys()  # nothing was patched onto the model
    asyncio.run(run_next_action(model, bench, method="reply", progress=False))
    assert model.calls[-1] is None  # reply mode: the model's own prompt


def test_bfcl_passes_each_entry_system_message_as_messages() -> None:
    from diaforge.eval.peers.bfcl.runner import run_bfcl

    d = load_dialogues(BENCH)[0]
    entry = d.model_copy(
        update={"provenance": Provenance(bfcl={"category": "irrelevance", "system": ["Answer in French."]})}
    )
    model = _Recorder("I cannot help with that.")
    metrics, _ = asyncio.run(run_bfcl(model, {"irrelevance": [entry]}, progress=False))
    [[shown]] = model.calls
    assert shown[0] == {"role": "system", "content": "our prompt\n\nAnswer in French."}
    assert shown[1:] == model.messages(entry)[1:]
    assert metrics["categories"]["irrelevance"]["accuracy"] == 1.0
    assert "messages" not in vars(model)


@pytest.mark.parametrize(
    ("given", "modes"),
    [
        ("both", ["static", "dynamic"]),
        ("static", ["static"]),
        ("dynamic,static", ["dynamic", "static"]),
        (["both"], ["static", "dynamic"]),
    ],
)
def test_modes_take_the_word_both_as_the_help_says(given: Any, modes: list[str]) -> None:
    """``--modes both`` was refused while its own error line offered "both"."""
    from diaforge.eval.eval_config import parse_modes

    assert parse_modes(given) == modes
    with pytest.raises(ValueError, match="use static, dynamic or both"):
        parse_modes("bothways")
