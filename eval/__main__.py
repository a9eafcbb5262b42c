from diaforge.console import run_main
from diaforge.eval.cli import main

run_main(main)
