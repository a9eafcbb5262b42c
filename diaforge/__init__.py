"""DiaFORGE: disambiguation-centric fine-tuning of tool-calling language models.

The one installed import name. Its modules are the shared core (schema, format, llm, ...); the
stages are its subpackages `diaforge.data_gen`, `diaforge.train`, `diaforge.eval`,
`diaforge.pipeline` and `diaforge.bench`, with `diaforge.recipes` and `diaforge.accelerate_configs`
as package data. The checkout keeps them as top-level folders beside this one (pyproject.toml's
`package-dir`; docs/architecture.md, "Folders and import names").

A wheel, or `pip install -e .`, places them under this name. A bare checkout on `PYTHONPATH` (a
`git archive` copied to a GPU machine that has no pip index) has them beside this folder instead,
so there the checkout's root joins this package's search path: each folder's name is its
subpackage's name. Importing this package loads nothing else.
"""

from pathlib import Path as _Path

_CHECKOUT = _Path(__file__).resolve().parent.parent
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "data_gen" / "__init__.py").is_file():
    __path__.append(str(_CHECKOUT))  # noqa: F821 (the package's own search path)
