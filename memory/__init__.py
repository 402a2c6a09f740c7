"""Memory: the message log and its keys, indexes, gates, retrievers and application policies.

This package imports no other package of ours (see docs/DESIGN.md, "Layout").
"""
