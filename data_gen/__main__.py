from data_gen.cli import main
from data_gen.console import run_main

run_main(main)
