"""What every benchmark shares: timing and memory measurement, the run's machine and checkout, Markdown
tables, speech-recognition scoring, and the plumbing of the retrieval benchmarks."""
