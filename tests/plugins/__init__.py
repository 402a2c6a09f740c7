"""Plugins the tests register exactly as a third party would: through entry points."""
