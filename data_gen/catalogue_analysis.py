"""Near-duplicate statistics of a catalogue (`python -m diaforge.data_gen analyze`), in bounded memory.

The composite score of DiaFORGE Appendix A.4 (`diaforge.similarity`) is computed over blocks of
rows, never as a tool-by-tool matrix: memory grows with the tools (their vectors, plus one block of
`BLOCK_CELLS` scores), time with the pairs. Per block:

* S_desc and the retrieval similarities are one product of the unit vectors (kept sparse for
  TF-IDF); S_param comes from two products of 0/1 matrices (required keys, and required keys with
  their base type), exactly as `param_similarity` computes it;
* S_name, a character LCS, is the one part computed pair by pair, so it is computed only where it
  can matter: for a pair whose score could still reach the threshold with the best S_name its
  letters allow (the LCS of two names is at most the letters they share, counted with repeats; one
  more product), and for each tool's top-k retrieved distractors.

The result is the same as scoring every pair (`composite_matrix`); a test holds the two together.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from diaforge.schema import Tool
from diaforge.similarity import (
    DEFAULT_K,
    NEAR_DUPLICATE_THRESHOLD,
    W_DESC,
    W_NAME,
    W_PARAM,
    Encoder,
    PairScore,
    composite_score,
    get_encoder,
    name_similarity,
    tool_text,
)

MAX_TEXT_CHARS = 8_000_000
"""Most characters of tool text the encoders read for one analysis (every description and every
retrieval text, `tool_text`): TF-IDF's time grows with the tools times their text. The bundled
catalogue reads about 340 per tool, so 5,000 such tools are 1.7 million; at both limits (5,000 tools
of 1,600 characters) the analysis takes a few minutes and under 1 GB."""
BLOCK_CELLS = 2_000_000
"""Scores held at once (rows per block x tools): about 16 MB per float64 array of a block."""
MAX_LISTED_PAIRS = 100_000
"""Most near-duplicate pairs listed (the highest scores); the counts always cover every pair."""
_SLACK = 1e-9
"""Margin of the S_name bound against rounding: a pair is scored exactly when its bound comes within
this of the threshold."""


def check_analysis_text(tools: Sequence[Tool], path: str | Path | None = None) -> None:
    """`InputError` before any work when the encoders would read more than `MAX_TEXT_CHARS`
    characters, naming the limit and the way around it."""
    from diaforge.errors import InputError

    chars = sum(len(t.description) + len(tool_text(t)) for t in tools)
    if chars > MAX_TEXT_CHARS:
        raise InputError(
            f"its descriptions and parameters come to {chars:,} characters for the encoders, over the limit of "
            f"{MAX_TEXT_CHARS:,} (the analysis time grows with the tools times their text); split it into smaller "
            "catalogues or shorten the longest descriptions",
            path=path,
        )


def _vectors(encoder: Encoder, texts: list[str]) -> Any:
    """Unit row vectors of `texts`: sparse when the encoder offers it (TF-IDF), else dense."""
    sparse = getattr(encoder, "encode_sparse", None)
    return sparse(texts) if sparse is not None else np.asarray(encoder.encode(texts), dtype=np.float64)


def _dot_block(mat: Any, rows: slice) -> np.ndarray:
    """``mat[rows] @ mat.T`` as a dense array (either operand may be sparse)."""
    out = mat[rows] @ mat.T
    return out.toarray() if hasattr(out, "toarray") else np.asarray(out)


def _indicator(rows: list[list[str]]) -> Any:
    """A sparse 0/1 matrix with one row per list and one column per distinct token."""
    from scipy.sparse import csr_matrix

    columns: dict[str, int] = {}
    indices, indptr = [], [0]
    for tokens in rows:
        indices.extend(columns.setdefault(t, len(columns)) for t in dict.fromkeys(tokens))
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float64)
    return csr_matrix((data, indices, indptr), shape=(len(rows), max(1, len(columns))))


class _Features:
    """What the block products need, built once per catalogue (linear in the tools)."""

    def __init__(self, tools: Sequence[Tool], encoder: Encoder) -> None:
        self.desc = _vectors(encoder, [t.description for t in tools])
        self.retrieval = _vectors(encoder, [tool_text(t) for t in tools])
        required = [sorted(set(t.required)) for t in tools]
        self.keys = _indicator(required)
        self.typed = _indicator(
            [
                [f"{k}\x1f{t.param_base_type(k)}" for k in keys]
                for t, keys in zip(tools, required, strict=True)
            ]
        )
        self.num_keys = np.array([len(keys) for keys in required], dtype=np.float64)
        # LCS(a, b) <= sum over letters of min(count in a, count in b) = <a's, b's> over the
        # indicators "letter c at least m times".
        names = [t.name.lower() for t in tools]
        self.letters = _indicator(
            [[f"{c}\x1f{m}" for c, n in Counter(s).items() for m in range(n)] for s in names]
        )
        self.name_len = np.array([len(s) for s in names], dtype=np.float64)

    def param_block(self, rows: slice) -> np.ndarray:
        """S_param of every tool in `rows` against every tool (`param_similarity`, vectorised)."""
        inter = _dot_block(self.keys, rows)
        same = _dot_block(self.typed, rows)
        union = self.num_keys[rows, None] + self.num_keys[None, :] - inter
        s_set = np.divide(inter, union, out=np.ones_like(inter), where=union > 0)
        s_type = np.divide(same, inter, out=np.zeros_like(inter), where=inter > 0)
        return 0.5 * s_set + 0.5 * s_type

    def name_bound(self, rows: slice) -> np.ndarray:
        """An upper bound of S_name for every pair of the block (1 for two empty names)."""
        shared = _dot_block(self.letters, rows)
        total = self.name_len[rows, None] + self.name_len[None, :]
        return np.divide(2.0 * shared, total, out=np.ones_like(shared), where=total > 0)


def _top_k(sims: np.ndarray, own: int, k: int) -> np.ndarray:
    """The k largest of `sims` other than `own`, ties by index (`DistractorRetriever.topk`)."""
    row = -sims.astype(np.float64, copy=True)
    row[own] = np.inf
    return np.argsort(row, kind="stable")[: min(k, len(row) - 1)]


class _Scan:
    """The running results of the block scan."""

    def __init__(self, n: int, max_pairs: int | None) -> None:
        self.has_dup = np.zeros(n, dtype=bool)
        self.num_pairs = 0
        self.max_pairs = max_pairs
        self._pairs: list[PairScore] = []
        self.topk_means: list[float] = []

    def add_pair(self, i: int, j: int, pair: PairScore) -> None:
        self.num_pairs += 1
        self.has_dup[i] = self.has_dup[j] = True
        self._pairs.append(pair)
        if self.max_pairs is not None and len(self._pairs) >= 2 * self.max_pairs + 1024:
            self._pairs = self.pairs()  # keeps the best; memory stays within twice the listing

    def pairs(self) -> list[PairScore]:
        """The listed pairs: highest score first, then by names; at most `max_pairs`."""
        self._pairs.sort(key=lambda p: (-p.score, p.a, p.b))
        return self._pairs[: self.max_pairs]


def _scan_block(
    tools: Sequence[Tool], f: _Features, rows: slice, scan: _Scan, threshold: float, k: int
) -> None:
    """Score one block of rows against every tool and add what it finds to `scan`."""
    n = len(tools)
    desc = np.clip((1.0 + _dot_block(f.desc, rows)) / 2.0, 0.0, 1.0)
    param = f.param_block(rows)
    partial = W_DESC * desc + W_PARAM * param
    bound = partial + W_NAME * f.name_bound(rows)
    retrieval = _dot_block(f.retrieval, rows)
    for r, i in enumerate(range(rows.start, rows.stop)):
        names: dict[int, float] = {}
        for j in np.nonzero(bound[r, i + 1 :] >= threshold - _SLACK)[0] + i + 1:
            names[j] = s_name = name_similarity(tools[i].name, tools[j].name)
            score = composite_score(s_name, desc[r, j], param[r, j])
            if score >= threshold:
                pair = PairScore(
                    tools[i].name, tools[j].name, score, s_name, float(desc[r, j]), float(param[r, j])
                )
                scan.add_pair(i, int(j), pair)
        if n > 1:
            picks = _top_k(retrieval[r], i, k)
            scores = [
                composite_score(
                    names[j] if j in names else name_similarity(tools[i].name, tools[j].name),
                    desc[r, j],
                    param[r, j],
                )
                for j in picks
            ]
            scan.topk_means.append(float(np.mean(scores)))


def analyze_catalogue(
    tools: Sequence[Tool],
    *,
    threshold: float = NEAR_DUPLICATE_THRESHOLD,
    k: int = DEFAULT_K,
    encoder: Encoder | None = None,
    max_pairs: int | None = MAX_LISTED_PAIRS,
    progress: bool | None = False,
) -> dict[str, Any]:
    """Near-duplicate statistics of a catalogue.

    - `tools_with_near_duplicate`: share of tools with at least one other tool scoring >= threshold;
    - `num_near_duplicate_pairs`: unordered pairs scoring >= threshold;
    - `mean_topk_similarity`: mean composite score between each tool and its k retrieved
      distractors (how hard the candidate pools the engine builds are);
    - `share_with_required_params`: share of tools with at least one required parameter;
    - `pairs`: the near-duplicate pairs, highest score first, with their components; at most
      `max_pairs` of them (None: all), `pairs_listed` says how many.

    Memory: the tools' vectors and one block of `BLOCK_CELLS` scores; with `progress`, a bar on
    stderr (`None`: on a terminal only).
    """
    from diaforge.console import progress as progress_bar

    if not tools:
        raise ValueError("the catalogue is empty")
    encoder = encoder or get_encoder()
    n = len(tools)
    features = _Features(tools, encoder)
    scan = _Scan(n, max_pairs)
    size = max(1, BLOCK_CELLS // n)
    starts = range(0, n, size)
    for start in progress_bar(starts, desc="near-duplicates", unit="block", enabled=progress):
        _scan_block(tools, features, slice(start, min(n, start + size)), scan, threshold, k)
    pairs = scan.pairs()
    by_lob: dict[str, list[bool]] = {}
    for t, flag in zip(tools, scan.has_dup, strict=True):
        by_lob.setdefault(str(t.metadata.get("line_of_business", "unspecified")), []).append(bool(flag))
    return {
        "num_tools": n,
        "encoder": encoder.name,
        "threshold": threshold,
        "k": k,
        "tools_with_near_duplicate": int(scan.has_dup.sum()) / n,
        "num_tools_with_near_duplicate": int(scan.has_dup.sum()),
        "num_near_duplicate_pairs": scan.num_pairs,
        "mean_topk_similarity": float(np.mean(scan.topk_means)) if scan.topk_means else 0.0,
        "share_with_required_params": sum(bool(t.required) for t in tools) / n,
        "by_line_of_business": {
            lob: {"num_tools": len(flags), "tools_with_near_duplicate": sum(flags) / len(flags)}
            for lob, flags in sorted(by_lob.items())
        },
        "pairs_listed": len(pairs),
        "pairs": [p.as_dict() for p in pairs],
    }
