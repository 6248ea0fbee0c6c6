"""The `hedwig` command's client subcommands, one module per job: publishing, reading and
subscribing, administration, completion; `common` holds what they share (the connection
options, errors, the client) and `output` how messages and replies are printed.
hedwig/commands/main.py assembles them into one parser."""
