from diaforge.cli import cli

cli()
