from diaforge.console import run_main
from diaforge.pipeline.cli import main

run_main(main)
