"""MkDocs hooks: every page about a knowledge-base entry is generated here, at build time.

The pages come from gpukb.site (importable and unit-tested without MkDocs); this file only hands
them to MkDocs. The site is built once per language: `mkdocs build -f site/mkdocs.yml` builds the
English site and then, from its last event, the Chinese one (site/mkdocs.zh.yml) into zh/ of the
same folder; every page's language switch links to the same page in the other language.
Environment overrides, for tests and previews of another checkout: GPUKB_SITE_ROOT (a folder
holding kb/ and rules/; default: this repository) and GPUKB_SITE_SCENARIOS (default:
site/scenarios.yaml), GPUKB_SITE_ASK_MODELS (comma-separated catalog model ids the ask page's grid
covers; default: every current model).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from gpukb.core.safewrite import write_file
from gpukb.site import LANGUAGES, SiteContent, generate
from gpukb.site.links import counterpart
from gpukb.site.safety import unsafe_html
from gpukb.site.search import chinese_words, without_table_headers

log = logging.getLogger("mkdocs.hooks.gpukb")
HERE = Path(__file__).resolve().parent
NAMES = {"en": "English", "zh": "中文"}
_site: SiteContent | None = None


def _lang(config: MkDocsConfig) -> str:
    return str(config.theme["language"])


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    global _site
    here = Path(config.config_file_path).resolve().parent
    root = Path(os.environ.get("GPUKB_SITE_ROOT") or here.parent)
    scenarios = Path(os.environ.get("GPUKB_SITE_SCENARIOS") or here / "scenarios.yaml")
    started = time.perf_counter()
    # None: the ask page's grid covers every current catalog model
    only = [m.strip() for m in os.environ.get("GPUKB_SITE_ASK_MODELS", "").split(",") if m.strip()] or None
    _site = generate(root, scenarios, docs_dir=config.docs_dir, lang=_lang(config), ask_models=only)
    log.info("gpukb: generated %d %s pages from %s (kb %s, %d scenarios) in %.1f s", len(_site.pages), _site.lang, root,
             _site.kb.version, len(_site.runs), time.perf_counter() - started)
    config.nav = _site.nav
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    assert _site is not None, "on_config generates the pages first"
    lang = _lang(config)
    for file in list(files):  # hand-written translations: `x.zh.md` replaces `x.md` in the zh build only
        stem, dot, suffix = file.src_uri.removesuffix(".md").rpartition(".")
        if not file.src_uri.endswith(".md") or not dot or suffix not in LANGUAGES:
            continue
        files.remove(file)
        if suffix == lang:
            original = files.get_file_from_path(f"{stem}.md")
            if original is not None:
                files.remove(original)
            files.append(File.generated(config, f"{stem}.md", abs_src_path=file.abs_src_path))
    for path, content in _site.pages.items():
        files.append(File.generated(config, path, content=content))
    return files


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """No page is written with anything that could run script (gpukb.site.safety): the build fails instead."""
    found = unsafe_html(html)
    if found:
        raise PluginError(f"{page.file.src_uri}: unsafe HTML in the rendered page: {'; '.join(found[:5])}")
    return without_table_headers(html)


def on_page_context(context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Any) -> dict[str, Any]:
    """The language switch in the header links to this very page in each language."""
    lang = _lang(config)
    context["gpukb_alternates"] = [
        {"name": NAMES.get(other, other), "lang": other, "href": counterpart(page.url, lang, other),
         "current": other == lang} for other in LANGUAGES]
    return context


def on_post_build(config: MkDocsConfig) -> None:
    """The index's Chinese words beside it; after the English site, the Chinese one, into zh/."""
    search = Path(config.site_dir) / "search"
    if (search / "search_index.json").is_file():  # the search plugin runs before the hooks
        # never through a link planted in the site folder: a temporary beside it, renamed into place
        write_file(search, "zh-words.json", chinese_words(search / "search_index.json"), replace=True)
    if _lang(config) != LANGUAGES[0]:
        return
    for lang in LANGUAGES[1:]:
        started = time.perf_counter()
        other = load_config(str(HERE / f"mkdocs.{lang}.yml"), site_dir=str(Path(config.site_dir) / lang),
                            strict=config.strict)
        build(other)
        log.info("gpukb: built the %s site in %.1f s", lang, time.perf_counter() - started)
