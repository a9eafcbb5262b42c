from diaforge.console import run_main
from diaforge.data_gen.cli import main

run_main(main)
