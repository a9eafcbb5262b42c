"""DiaFORGE: disambiguation-centric fine-tuning of tool-calling language models.

The one installed import name. Its modules are the shared core (schema, format, llm, ...); the
stages are its subpackages `diaforge.data_gen`, `diaforge.train`, `diaforge.eval`,
`diaforge.pipeline` and `diaforge.bench`, kept as top-level folders of the checkout (pyproject.toml's
`package-dir`; docs/architecture.md). Importing this package loads nothing else.
"""
