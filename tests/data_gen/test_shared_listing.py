"""Dialogues over a shared candidate listing (`dialogues_per_listing`, data_gen/seed_engine.py):
siblings show the same tools in the same order, each tool of the listing is the gold of its own
dialogue, the group is recorded in the provenance, shards and reruns give the same records, and the
default stays the paper's one listing per seed."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.data_gen.engine import generate
from diaforge.data_gen.gen_config import GenerationConfig, load_config
from diaforge.data_gen.seed_engine import LISTING_GROUP
from diaforge.data_gen.validators import run_rule_validators
from diaforge.errors import InputError
from diaforge.schema import load_dialogues

TRAIN = ROOT / "data_gen" / "assets" / "catalogue_train.json"


def config(out: Path, n: int, **kw) -> GenerationConfig:
    return GenerationConfig(
        catalogue=str(TRAIN),
        out=str(out),
        num_dialogues=n,
        seed=5,
        encoder="tfidf",
        progress=False,
        plots=False,
        export=False,
        **kw,
    )


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    out = tmp_path_factory.mktemp("shared") / "run"
    cfg = config(out, 18, dialogues_per_listing=6, reasoning="lookup")
    summary = asyncio.run(generate(cfg))
    return cfg, summary, load_dialogues(out / "dialogues.jsonl")


@pytest.mark.slow(reason="generates a corpus end to end")
def test_siblings_share_one_listing_and_each_tool_is_a_gold(shared) -> None:
    _, summary, dialogues = shared
    assert summary.seeds == 18 and len(dialogues) >= 15
    groups = defaultdict(list)
    for d in dialogues:
        extra = d.provenance.model_extra
        assert extra[LISTING_GROUP] == extra["seed_index"] // 6
        groups[extra[LISTING_GROUP]].append(d)
    assert sorted(groups) == [0, 1, 2]
    for members in groups.values():
        listing = [t.model_dump(mode="json") for t in members[0].candidate_tools]
        assert len(listing) == 6  # k + 1
        for d in members:
            # Same tools, same order: the rendered system prompt and listing are identical.
            assert [t.model_dump(mode="json") for t in d.candidate_tools] == listing
            assert run_rule_validators(d)[-1].passed
        golds = [d.seed_tool for d in members]
        assert len(set(golds)) == len(golds)  # each its own gold
        assert set(golds) <= {t["name"] for t in listing}
        # Each with its own persona draw, values and goal.
        assert len({d.goal for d in members}) == len(members)
    full = [m for m in groups.values() if len(m) == 6]
    assert full, "no group had all six dialogues accepted"
    for members in full:
        assert {d.seed_tool for d in members} == {t.name for t in members[0].candidate_tools}
    # Different groups show different listings.
    firsts = [tuple(t.name for t in m[0].candidate_tools) for m in groups.values()]
    assert len(set(firsts)) == 3


@pytest.mark.slow(reason="generates a corpus end to end")
def test_shards_and_rerun_give_the_same_records(shared, tmp_path: Path) -> None:
    cfg, _, dialogues = shared
    got = []
    for shard in (0, 1):
        out = tmp_path / f"shard{shard}"
        scfg = config(out, 18, dialogues_per_listing=6, reasoning="lookup", num_shards=2, shard_index=shard)
        asyncio.run(generate(scfg))
        got += load_dialogues(out / "dialogues.jsonl")
    key = lambda d: d.provenance.model_extra["seed_index"]  # noqa: E731
    assert [d.model_dump_json() for d in sorted(got, key=key)] == [d.model_dump_json() for d in dialogues]
    again = asyncio.run(generate(cfg))
    assert again.skipped == 18
    assert load_dialogues(Path(cfg.out) / "dialogues.jsonl") == dialogues


def test_default_keeps_one_listing_per_seed(tmp_path: Path) -> None:
    cfg = config(tmp_path / "d", 6)
    asyncio.run(generate(cfg))
    dialogues = load_dialogues(tmp_path / "d" / "dialogues.jsonl")
    assert all(LISTING_GROUP not in d.provenance.model_extra for d in dialogues)
    assert len({tuple(t.name for t in d.candidate_tools) for d in dialogues}) == len(dialogues)
    # A run folder made before the option existed resumes: the default leaves the fingerprint alone.
    assert "dialogues_per_listing" not in cfg.fingerprint("x")
    assert config(tmp_path, 6, dialogues_per_listing=3).fingerprint("x")["dialogues_per_listing"] == 3


@pytest.mark.slow(reason="generates a corpus end to end")
def test_misses_keep_a_listing_of_their_own(tmp_path: Path) -> None:
    cfg = config(tmp_path / "m", 12, dialogues_per_listing=6, no_tool_share=0.25)
    asyncio.run(generate(cfg))
    dialogues = load_dialogues(tmp_path / "m" / "dialogues.jsonl")
    misses = [d for d in dialogues if d.seed_tool is None]
    assert misses and all(LISTING_GROUP not in d.provenance.model_extra for d in misses)
    assert all(LISTING_GROUP in d.provenance.model_extra for d in dialogues if d.seed_tool is not None)


def test_more_dialogues_than_listed_tools_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"dialogues_per_listing.*at most 4"):
        load_config(None, catalogue=str(TRAIN), k=3, dialogues_per_listing=5)
    path = tmp_path / "c.yaml"
    path.write_text("dialogues_per_listing: 0\n")
    with pytest.raises(InputError, match="dialogues_per_listing"):
        load_config(path)
