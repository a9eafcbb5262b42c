"""The persona bank and persona sampling by top-k retrieval with randomisation.

For a seed tool, the sampler ranks personas by the cosine similarity of their text to the tool's
text and draws one uniformly from the k best (the paper's pi_rand^(k)(. | tau*, P)): the persona
fits the tool's line of business, and different seeds of the same tool still see different people.

When the tool declares ``metadata.line_of_business`` and the bank holds personas of that line of
business (compared case- and punctuation-insensitively), the draw is restricted to them: a
payroll tool is never requested by a marketing manager, even when the line holds fewer than k
personas. A tool without that metadata, or one whose line the bank does not cover, is ranked
against the whole bank as before.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from diaforge.errors import InputError
from diaforge.hygiene import load_json, read_text_file
from diaforge.jsonl import validate_record
from diaforge.schema import Persona, Tool
from diaforge.similarity import Encoder, get_encoder, tool_text
from diaforge.text import line_of_business_key

DEFAULT_TOP_K = 10
LOB_BONUS = 2.0  # larger than any cosine gap, so the line of business decides first


def same_line_of_business(a: object, b: object) -> bool:
    """Whether two line-of-business labels name the same line: ``"Travel & Expense"`` and
    ``"travel and expense"`` do; a missing or empty label matches nothing."""
    ka, kb = _lob_key(a), _lob_key(b)
    return bool(ka) and ka == kb


_lob_key = line_of_business_key


def bundled_personas_path() -> Path:
    return Path(str(resources.files("diaforge.data_gen") / "assets" / "personas.jsonl"))


def load_personas(path: str | Path | None = None) -> list[Persona]:
    """Personas from our JSONL format or PersonaHub-style JSONL (`{"persona": "..."}` per line,
    optionally with an `id`); the bundled bank when `path` is None.

    A bad line raises `InputError` naming the file, the line and the field; an empty file too.
    """
    p = Path(path) if path is not None else bundled_personas_path()
    if not p.exists():
        raise InputError("file not found", path=p)
    if p.is_dir():
        raise InputError("is a directory, expected a JSONL file of personas", path=p)
    personas: list[Persona] = []
    seen: dict[str, int] = {}
    text = read_text_file(p, what="persona file")
    # One record per line; every line checked (UTF-8, JSON, values JSON can hold).
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = load_json(line, path=p, record=lineno)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"invalid JSON ({exc.msg} at column {exc.colno})", path=p, record=lineno
            ) from None
        if isinstance(obj, dict) and "persona" in obj and "description" not in obj:
            obj = _from_personahub(obj, p, lineno)
        persona = validate_record(obj, Persona, path=p, record=lineno)
        if persona.id in seen:
            raise InputError(
                f"duplicate persona id {persona.id!r} (first at line {seen[persona.id]})",
                path=p,
                record=lineno,
                field="id",
            )
        seen[persona.id] = lineno
        personas.append(persona)
    if not personas:
        raise InputError("file holds no personas", path=p)
    return personas


def _from_personahub(obj: dict, path: Path, lineno: int) -> dict:
    text = obj["persona"]
    if not isinstance(text, str) or not text.strip():
        raise InputError("persona must be a non-empty string", path=path, record=lineno, field="persona")
    pid = obj.get("id") or "ph-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
    return {"id": str(pid), "description": text.strip()}


@dataclass
class PersonaSampler:
    """Draws a persona for a tool: uniform over the `top_k` personas most similar to the tool."""

    personas: Sequence[Persona]
    encoder: Encoder = field(default_factory=get_encoder)
    top_k: int = DEFAULT_TOP_K

    def __post_init__(self) -> None:
        if not self.personas:
            raise ValueError("the persona bank is empty")
        if self.top_k < 1:
            raise ValueError("top_k must be at least 1")
        self._texts = [p.text() for p in self.personas]
        self._vecs = None if getattr(self.encoder, "joint_fit", False) else self.encoder.encode(self._texts)

    def ranked(self, tool: Tool) -> list[tuple[Persona, float]]:
        """All personas with their similarity to the tool, most similar first. Personas of the
        tool's own line of business (when both declare one) rank above all others."""
        if self._vecs is None:
            mat = self.encoder.encode([*self._texts, tool_text(tool)])
            sims = mat[:-1] @ mat[-1]
        else:
            sims = self._vecs @ self.encoder.encode([tool_text(tool)])[0]
        lob = tool.metadata.get("line_of_business")
        if lob:
            sims = sims + np.array(
                [LOB_BONUS if same_line_of_business(p.line_of_business, lob) else 0.0 for p in self.personas]
            )
        order = np.lexsort((np.arange(len(sims)), -sims))
        return [(self.personas[i], float(sims[i])) for i in order]

    def pool(self, tool: Tool) -> list[Persona]:
        """The personas a draw for `tool` chooses among: the `top_k` most similar of the tool's
        line of business when the bank has any of that line (fewer when it has fewer), else the
        `top_k` most similar of the whole bank."""
        lob = tool.metadata.get("line_of_business")
        ranked = [p for p, _ in self.ranked(tool)]
        own = [p for p in ranked if same_line_of_business(p.line_of_business, lob)]
        return (own or ranked)[: self.top_k]

    def sample(self, tool: Tool, rng: random.Random) -> Persona:
        """One persona for `tool`, uniform over `pool(tool)`."""
        return rng.choice(self.pool(tool))
