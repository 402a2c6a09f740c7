"""Consent records, withdrawal, retention, pseudonymization and benchmark export."""
