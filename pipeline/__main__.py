from diaforge.console import run_main
from pipeline.cli import main

run_main(main)
