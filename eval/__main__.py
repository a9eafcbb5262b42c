from diaforge.console import run_main
from eval.cli import main

run_main(main)
