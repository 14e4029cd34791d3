"""Benchmarks and evaluation: store speed, retrieval quality on real and project-written meetings."""
