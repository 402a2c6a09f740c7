"""The companion app: the turn, the model gateway, the Gradio UI, the CLI, scheduled jobs.

Importing this package switches off every phone-home the dependencies would otherwise do:
no telemetry anywhere, no network unless a remote model is configured.
"""

import os

_OFFLINE = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm fetches a price list on import otherwise
    "LITELLM_MODE": "PRODUCTION",  # ... and reads a .env from the working directory
    "GRADIO_ANALYTICS_ENABLED": "False",
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
for _k, _v in _OFFLINE.items():
    os.environ[_k] = _v

__version__ = "0.1.0"
