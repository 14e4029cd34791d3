"""The cloud side of meetmem: answering questions over the transcript (and, later, the HTTP service).

Importing this package is cheap: FastAPI and the models are imported only where they are used.
"""
