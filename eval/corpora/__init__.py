"""Retrieval and ledger quality on real corpora (QMSum, LoCoMo, AMI) and on the project's Chinese meeting
(`data/`), and the report that runs them together (`meetmem eval report`)."""
