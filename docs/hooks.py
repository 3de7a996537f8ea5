"""MkDocs hook: keep the navigation to the pages this checkout actually has.

The ``nav`` in ``mkdocs.yml`` lists every page of the site, including pages that other
branches add (``performance.md``, ``gpu.md``, ``dask.md``, ...). A nav entry whose file is
missing would fail ``mkdocs build --strict``, so this hook drops such entries before the
build. The API pages of optional subpackages (``api-variants.md`` documents
``numsoft.variants``) are dropped, nav entry and file, while that subpackage is absent
from the source tree, because mkdocstrings would fail on them.

Links to a dropped page (``[Dask](dask.md)``) become plain text, so pages may link to
each other before the target exists; links to any other missing page still fail the
strict build.

Adding a page: put ``docs/NAME.md`` in place and list it in ``nav``; nothing else.

Math: ``$...$`` (inline) and ``$$...$$`` (display) in pages and docstrings are TeX.
``pymdownx.arithmatex`` keeps them out of Markdown's hands, and ``on_page_content``
turns each into MathML with ``latex2mathml`` while the site is built. Browsers render
MathML natively, so the site needs no math script, font or CDN: it works offline.
"""

from __future__ import annotations

import html
import logging
import re
from pathlib import Path

from latex2mathml.converter import convert as tex_to_mathml

log = logging.getLogger("mkdocs.hooks.numsoft")

#: API pages that document an optional subpackage: page → the module's path (no suffix).
OPTIONAL_API_PAGES = {
    "api-variants.md": "numsoft/variants",
    "api-fused.md": "numsoft/fused",
}


def _module_present(root: Path, module_path: str) -> bool:
    base = root / module_path
    return (base / "__init__.py").is_file() or base.with_suffix(".py").is_file()


def _available(docs_dir: Path, root: Path, page: str) -> bool:
    if not (docs_dir / page).is_file():
        return False
    module = OPTIONAL_API_PAGES.get(page)
    return module is None or _module_present(root, module)


#: Pages listed in ``nav`` but left out of this build (filled by ``on_config``).
_dropped: set[str] = set()

#: A Markdown link ``[text](target.md#anchor)``; group 1 is the text, 2 the page.
_LINK = re.compile(r"\[([^\]]+)\]\(([\w./-]+\.md)(#[\w-]*)?\)")


def _prune(items, keep):
    """The nav ``items`` without entries whose page fails ``keep`` (empty sections go too)."""
    pruned = []
    for item in items:
        if isinstance(item, dict):
            ((title, value),) = item.items()
        else:
            title, value = None, item
        if isinstance(value, list):
            value = _prune(value, keep)
            if not value:
                continue
        elif isinstance(value, str) and "://" not in value and not keep(value):
            log.info("nav: leaving out %s (not in this checkout)", value)
            _dropped.add(value)
            continue
        pruned.append(value if title is None else {title: value})
    return pruned


def on_config(config):
    _dropped.clear()
    docs_dir = Path(config["docs_dir"])
    root = Path(config["config_file_path"]).parent
    if config["nav"]:
        config["nav"] = _prune(config["nav"], lambda page: _available(docs_dir, root, page))
    return config


def on_files(files, config):
    root = Path(config["config_file_path"]).parent
    for page, module in OPTIONAL_API_PAGES.items():
        f = files.get_file_from_path(page)
        if f is not None and not _module_present(root, module):
            files.remove(f)
    return files


def on_page_markdown(markdown, page, config, files):
    """Turn links to pages left out of this build into their plain text."""

    def unlink(match):
        return match.group(1) if match.group(2) in _dropped else match.group(0)

    return _LINK.sub(unlink, markdown)


#: What ``pymdownx.arithmatex`` (generic mode) leaves of ``$...$`` and ``$$...$$``.
_MATH = re.compile(
    r'<span class="arithmatex">\\\((.*?)\\\)</span>'
    r'|<div class="arithmatex">\\\[(.*?)\\\]</div>',
    re.DOTALL,
)


def _mathml(match) -> str:
    inline, display = match.groups()
    if inline is not None:
        return tex_to_mathml(html.unescape(inline), display="inline")
    # A display formula wider than the column scrolls inside a box of its own:
    # browsers ignore overflow on the <math> element itself, and a long formula ran off
    # the right edge of the page at 1400 px.
    mathml = tex_to_mathml(html.unescape(display), display="block")
    return f'<div class="math-display">{mathml}</div>'


def on_page_content(content, page, config, files):
    """Render the page's TeX formulas as MathML (see the module docstring)."""
    content = _MATH.sub(_mathml, content)
    if 'class="arithmatex"' in content:  # a form _MATH does not know: fail the strict build
        log.warning("%s: a formula was left unrendered", page.file.src_path)
    return content
