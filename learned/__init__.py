"""What is trained: the small shipped artifacts, their versions and their numpy-only loaders.

The commands that rebuild them from annotated data (`meetmem train ...`) live with the evaluation code
(`meetmem.eval.training`); what is here only loads and runs them.
"""
