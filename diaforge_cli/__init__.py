"""`diaforge`: one console command whose subcommands are the project's existing command lines."""
