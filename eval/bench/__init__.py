"""The benchmarks of the product's own paths: store, serve, edge, summaries, context, audio, delete and faults,
with the synthetic corpora they run on and the helpers that start a server or an edge in its own process and
put it under load. Each `meetmem bench NAME` module registers its subcommand with `add_parser`."""
