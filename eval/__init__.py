"""Offline eval: corpus readers, replay through the turn, metrics, reports."""
