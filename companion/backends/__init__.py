"""Model backends reached through litellm as custom providers, one file per backend."""
