"""Benchmarks and evaluation: the needle-recall harness (`needles`), quality on real corpora (`corpora`), the
benchmarks of the product's own paths (`bench`) and what they all share (`harness`)."""
