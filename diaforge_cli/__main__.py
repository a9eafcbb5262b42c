from diaforge_cli.main import cli

cli()
