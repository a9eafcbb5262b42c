from diaforge.data_gen.cli import main

from diaforge.console import run_main

run_main(main)
