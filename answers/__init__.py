"""Answering questions about meetings, one way through: plan → retrieve → write → build.

1. `plan.plan(question, context)` decides the route (verbatim, time, topic, speaker, why, decision,
   overview) with its parameters and why: a pure function of the question and the meeting's clock and
   speakers.
2. Retrieval for each route, over the log, the indexes and the ledger (`extractive`, `routes`, `overview`),
   gives a draft in the transcript's own words.
3. A writer keeps the draft (extractive, the default) or has a language model write over the same plan and
   evidence (`model`), every quote checked against the transcript.
4. `records.build_answer` builds the answer once: citations, manifest, the CONTRACT's JSON, for the CLI,
   HTTP, across meetings (`across`) and spoken questions alike.

Importing this package is cheap: the models and the search are loaded by the caller.
"""
