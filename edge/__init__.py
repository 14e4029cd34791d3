"""The edge agent: microphone or file to clean, timestamped transcript segments, synced to the cloud.

Runs on a Raspberry Pi class board with the `edge` extra alone: it never imports the cloud, FastAPI,
torch or the search index.
"""
