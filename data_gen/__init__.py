"""The dialogue engine (UTC-Gen) and the shared vocabulary of the toolkit.

`diaforge.schema` and `diaforge.format` define the records every other stage reads and writes;
`train` and `eval` import them, never the other way round.
"""

__version__ = "0.1.0"
