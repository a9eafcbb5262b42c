"""The block-by-block catalogue analysis: the same result as scoring every pair, memory that grows
with the tools, and catalogues past the limits refused before any work, measured in a real
subprocess (issue 25: a 60 MB catalogue took 139 s and 14 GB of RSS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from _repo import ROOT

import diaforge.data_gen.catalogue_analysis as analysis
from diaforge.data_gen.catalogue import MAX_TOOLS, load_catalogue
from diaforge.data_gen.catalogue_analysis import analyze_catalogue
from diaforge.schema import Tool
from diaforge.similarity import DistractorRetriever, TfidfEncoder, composite_matrix, pair_score

BUNDLED = ROOT / "data_gen" / "assets" / "catalogue.json"
RSS_LIMIT_KB = 3 * 1024 * 1024  # 3 GiB


def _replicated(copies: int | None = None, *, min_bytes: int = 0) -> list[dict]:
    """The bundled catalogue's records, repeated with renamed names (``NAME_COPY``) until there are
    `copies` rounds or `min_bytes` of JSON."""
    tools = json.loads(BUNDLED.read_text(encoding="utf-8"))
    out, size, i = [], 0, 0
    while (copies is not None and i < copies * len(tools)) or size < min_bytes:
        base = tools[i % len(tools)]
        record = {**base, "name": f"{base['name']}_{i // len(tools)}"}
        out.append(record)
        size += len(json.dumps(record)) + 1
        i += 1
    return out


def _tools(records: list[dict]) -> list[Tool]:
    return [Tool(name=r["name"], description=r["description"], parameters=r["parameters"]) for r in records]


def _reference(tools: list[Tool], encoder, threshold: float, k: int) -> dict:
    """The analysis as it was before the block scan: the full matrix and the retriever."""
    desc_vecs = encoder.encode([t.description for t in tools])
    mat = composite_matrix(tools, encoder, desc_vecs=desc_vecs)
    n = len(tools)
    pairs = {
        (tools[i].name, tools[j].name): pair_score(tools[i], tools[j], desc_vecs[i], desc_vecs[j]).score
        for i in range(n)
        for j in range(i + 1, n)
        if mat[i, j] >= threshold
    }
    retriever = DistractorRetriever(tools, encoder)
    index = {t.name: i for i, t in enumerate(tools)}
    means = [
        float(np.mean([mat[i, index[p.name]] for p in retriever.topk(t.name, k)]))
        for i, t in enumerate(tools)
    ]
    with_dup = sum(bool(np.nanmax(mat[i]) >= threshold) for i in range(n))
    return {"pairs": pairs, "with_dup": with_dup, "mean_topk": float(np.mean(means))}


def _edge_tools() -> list[Tool]:
    """Names sharing letters in different orders, empty and shared required keys of equal and
    different types, non-ASCII names."""

    def tool(name: str, description: str, required: dict) -> Tool:
        params = {"type": "object", "properties": required, "required": list(required)}
        return Tool(name=name, description=description, parameters=params)

    s, i, d = {"type": "string"}, {"type": "integer"}, {"type": "string", "format": "date"}
    return [
        tool("get_order", "Read an order.", {"order_id": s}),
        tool("get_orders", "Read orders.", {"order_id": i}),
        tool("order_get", "Read an order.", {"order_id": s, "day": d}),
        tool("list_rooms", "List the meeting rooms.", {}),
        tool("list_room", "List the meeting rooms.", {}),
        tool("café_réservée", "Réserver une table.", {"day": d}),
        tool("cafe_reserve", "Book a table.", {"day": s}),
        tool("x", "Nothing alike.", {}),
    ]


@pytest.mark.parametrize("block_cells", [1, 97, analysis.BLOCK_CELLS])
@pytest.mark.parametrize("threshold", [0.0, 0.5, 0.7, 0.9])
def test_the_block_scan_equals_scoring_every_pair(monkeypatch, block_cells, threshold):
    raw = _replicated(copies=1)[:60] + _replicated(copies=2)[556:580]
    tools = [*_edge_tools(), *_tools(raw)]
    monkeypatch.setattr(analysis, "BLOCK_CELLS", block_cells)
    encoder = TfidfEncoder()
    ours = analyze_catalogue(tools, encoder=encoder, threshold=threshold, k=3, max_pairs=None)
    ref = _reference(tools, encoder, threshold, 3)
    listed = {(p["a"], p["b"]): p["score"] for p in ours["pairs"]}
    assert listed.keys() == ref["pairs"].keys()
    assert all(abs(listed[key] - round(score, 6)) < 1e-9 for key, score in ref["pairs"].items())
    assert ours["num_near_duplicate_pairs"] == len(ref["pairs"]) == ours["pairs_listed"]
    assert ours["num_tools_with_near_duplicate"] == ref["with_dup"]
    assert ours["mean_topk_similarity"] == pytest.approx(ref["mean_topk"], abs=1e-12)


def test_the_listing_is_capped_and_the_counts_are_not():
    tools = _tools(_replicated(copies=3)[:900])
    full = analyze_catalogue(tools, encoder=TfidfEncoder(), max_pairs=None)
    capped = analyze_catalogue(tools, encoder=TfidfEncoder(), max_pairs=10)
    assert full["num_near_duplicate_pairs"] == capped["num_near_duplicate_pairs"] > 10
    assert capped["pairs_listed"] == 10 and capped["pairs"] == full["pairs"][:10]
    assert capped["tools_with_near_duplicate"] == full["tools_with_near_duplicate"]


def _analyze_in_a_subprocess(catalogue: Path) -> tuple[int, str, float, int]:
    """`python -m diaforge.data_gen analyze --encoder tfidf` as a child: its exit code, stderr, seconds and
    peak RSS in KiB (from the child's own rusage, `os.wait4`)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    argv = [
        sys.executable,
        "-m",
        "diaforge.data_gen",
        "analyze",
        "--catalogue",
        str(catalogue),
        "--encoder",
        "tfidf",
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, err, time.perf_counter() - started, usage.ru_maxrss


def test_a_60_mb_catalogue_is_refused_before_any_work_in_little_memory(tmp_path):
    big = tmp_path / "big.json"
    big.write_text(json.dumps(_replicated(min_bytes=60 * 1024 * 1024)), encoding="utf-8")
    assert big.stat().st_size > 60 * 1024 * 1024
    code, err, seconds, rss_kb = _analyze_in_a_subprocess(big)
    line = err.strip()
    assert code == 2 and "\n" not in line, err
    assert "big.json" in line and "over the limit" in line and "split it" in line, line
    assert rss_kb < RSS_LIMIT_KB and seconds < 30, (rss_kb, seconds)


@pytest.mark.slow
def test_a_catalogue_at_the_tool_limit_is_analysed_within_3_gb(tmp_path):
    """The largest catalogue `analyze` accepts (MAX_TOOLS tools of the bundled kind, each with
    copies that are near-duplicates of it) is analysed in well under 3 GiB of RSS (about 0.4)."""
    path = tmp_path / "limit.json"
    records = _replicated(copies=MAX_TOOLS // 556 + 1)[:MAX_TOOLS]
    path.write_text(json.dumps(records), encoding="utf-8")
    assert len(load_catalogue(path).tools) == MAX_TOOLS
    code, err, seconds, rss_kb = _analyze_in_a_subprocess(path)
    assert code == 0, err[-2000:]
    assert rss_kb < RSS_LIMIT_KB, rss_kb
    print(f"{MAX_TOOLS} tools: {seconds:.0f} s, {rss_kb / 1024:.0f} MiB peak RSS")


def test_too_much_text_for_the_encoders_is_refused_before_any_work(tmp_path, capsys):
    from diaforge.data_gen.catalogue_analysis import MAX_TEXT_CHARS
    from diaforge.data_gen.cli import main

    records = _replicated(copies=1)[:500]
    long_description = "Reads a record of the ledger. " * (MAX_TEXT_CHARS // (2 * 30 * len(records)) + 1)
    path = tmp_path / "wordy.json"
    path.write_text(json.dumps([{**r, "description": long_description} for r in records]), encoding="utf-8")
    started = time.perf_counter()
    assert main(["analyze", "--catalogue", str(path), "--encoder", "tfidf"]) == 2
    assert time.perf_counter() - started < 10
    line = capsys.readouterr().err.strip()
    assert "wordy.json" in line and f"over the limit of {MAX_TEXT_CHARS:,}" in line and "split it" in line, (
        line
    )
    # Within the limit it is analysed.
    path.write_text(json.dumps(records), encoding="utf-8")
    assert main(["analyze", "--catalogue", str(path), "--encoder", "tfidf", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["num_tools"] == 500
