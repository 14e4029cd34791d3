"""`meetmem train ...`: the seeded commands that rebuild the shipped learned artifacts from annotated data."""
