"""The builder of the bundled assets (`scripts/build_assets.py` is its command line).

- `sources`: read and check the data files under `data_gen/assets/sources/` (lines of business,
  parameter library, tool families and singletons, persona ingredients); a malformed file is one
  `InputError` naming the file, the entry and the field.
- `tools`: expand families into tools, resolve parameters against the library, check every tool
  and property, and give the catalogue records.
- `personas`: compose the persona bank from its ingredients with a seeded RNG.
"""
