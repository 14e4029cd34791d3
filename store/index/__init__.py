"""Derived search indexes over the transcript log: BM25, dense vectors, and their fusion.

Everything here is rebuildable from the log. Heavy libraries (rank-bm25, jieba, faiss, the embedding
models) are imported inside constructors, so importing this package costs nothing.
"""
