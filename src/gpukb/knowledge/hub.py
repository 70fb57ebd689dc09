"""`hf:ORG/NAME`: fetch a model's config.json, and nothing else, from the Hugging Face Hub.

Needs the optional `hub` extra (`pip install 'gpukb[hub]'`); the rest of gpukb never touches the
network.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..core.errors import WorkloadError
from ..core.messages import message

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def download_config(repo: str) -> Path:
    """The local path of the repository's config.json, downloaded (or cached) by huggingface_hub."""
    if not REPO_ID.match(repo) or ".." in repo:
        raise WorkloadError("model", message("hub_repo_format", repo=repo))
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise WorkloadError("model", message("hub_extra", repo=repo)) from None
    try:
        return Path(hf_hub_download(repo_id=repo, filename="config.json"))
    except Exception as error:  # network, authentication, missing repository: all end the same way
        detail = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else 'no detail'}"
        raise WorkloadError("model", message("hub_download", repo=repo, detail=detail)) from None
