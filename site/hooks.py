"""MkDocs hooks: every page about a knowledge-base entry is generated here, at build time.

The pages come from gpukb.site (importable and unit-tested without MkDocs); this file only hands
them to MkDocs. Environment overrides, for tests and previews of another checkout:
GPUKB_SITE_ROOT (a folder holding kb/ and rules/; default: this repository) and
GPUKB_SITE_SCENARIOS (default: site/scenarios.yaml).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from gpukb.site import SiteContent, generate

log = logging.getLogger("mkdocs.hooks.gpukb")
_site: SiteContent | None = None


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    global _site
    here = Path(config.config_file_path).resolve().parent
    root = Path(os.environ.get("GPUKB_SITE_ROOT") or here.parent)
    scenarios = Path(os.environ.get("GPUKB_SITE_SCENARIOS") or here / "scenarios.yaml")
    started = time.perf_counter()
    _site = generate(root, scenarios, docs_dir=config.docs_dir)
    log.info("gpukb: generated %d pages from %s (kb %s, %d scenarios) in %.1f s", len(_site.pages), root,
             _site.kb.version, len(_site.runs), time.perf_counter() - started)
    config.nav = _site.nav
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    assert _site is not None, "on_config generates the pages first"
    for path, content in _site.pages.items():
        files.append(File.generated(config, path, content=content))
    return files
