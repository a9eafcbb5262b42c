"""Static and dynamic evaluation of tool-calling models (DiaFORGE Appendix C).

``from eval import EvalConfig, evaluate`` runs what ``python -m diaforge.eval run`` runs
(`diaforge.eval.evaluation`); the names are loaded on first use, so ``import eval.<module>`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from diaforge.eval.eval_config import EvalConfig, load_eval_config
    from diaforge.eval.evaluation import EvalResult, aevaluate, evaluate

__all__ = ["EvalConfig", "EvalResult", "aevaluate", "evaluate", "load_eval_config"]

_HOMES = {
    "EvalConfig": "diaforge.eval.eval_config",
    "load_eval_config": "diaforge.eval.eval_config",
    "EvalResult": "diaforge.eval.evaluation",
    "aevaluate": "diaforge.eval.evaluation",
    "evaluate": "diaforge.eval.evaluation",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'eval' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
