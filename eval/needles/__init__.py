"""The needle-recall harness: generated meetings with planted facts (the needles), their wording, noise and
spoken audio, the methods compared on them, the scoring and the report (`meetmem eval run|report`)."""
