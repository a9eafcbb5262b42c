"""BFCL (Berkeley Function Calling Leaderboard): importer, AST checker and parity runner.

The data ships in the PyPI wheel ``bfcl-eval`` (Apache-2.0), installed without its dependencies
(``pip install --no-deps bfcl-eval==2026.3.23``); it is read from the installed package at run
time (`diaforge.eval.peers.bfcl.categories.bfcl_data_dir`), or from any folder laid out the same way. Its
files named ``.json`` are JSON Lines.

One module per responsibility:

* `diaforge.eval.peers.bfcl.categories`: BFCL's categories, their documented sizes, the language each is
  checked in, and where the data files are;
* `diaforge.eval.peers.bfcl.importer`: BFCL records -> our `Dialogue` (`load_bfcl`), the multi-turn ones
  through `diaforge.eval.peers.bfcl.multi_turn`, both from the parts `diaforge.eval.peers.bfcl.entries` reads
  (messages, function documents as BFCL shows them, gold calls);
* `diaforge.eval.peers.bfcl.checker`: BFCL's AST checker re-implemented on our schema (`check_calls`);
* `diaforge.eval.peers.bfcl.runner`: the parity runner (``python -m diaforge.eval bfcl``): prompts, verdicts,
  per-category accuracy, the run folder.
"""
