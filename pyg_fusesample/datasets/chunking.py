"""Chunk size that bounds the temporaries of the per-edge and per-row loops."""

# Edges are drawn in chunks of this many so that temporaries stay bounded
# (a chunk costs a few hundred MB).  It is a fixed constant, not derived from
# the machine, so generation is reproducible everywhere.
_CHUNK = 1 << 24
