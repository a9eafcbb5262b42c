"""The pipeline: every stage in one resumable, timed command (data -> training -> evaluation).

`diaforge demo` (`python -m diaforge.pipeline demo`, `make demo`) runs the whole loop on SmolLM2-135M on a
CPU; `diaforge demo-curve` trains at several corpus sizes and plots the learning curve. It sits on
top of the stages and runs each through its public command; the files it reads ship inside the
installed packages, so it runs from any folder.
"""
