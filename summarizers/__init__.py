"""Layered summaries (L1 per topic section from the raw log, L2 from the L1s) and the decisions ledger."""
