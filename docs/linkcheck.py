"""Check a built site: every internal link and anchor resolves, and nothing loads from
the network (the site must work offline: no script, stylesheet, font or image from
another host).

    python docs/linkcheck.py site/

Links to other sites (``<a href="https://...">``) are only counted: they are for the
reader to follow, not for the page to load. Exits 1 and lists each broken link.
"""

from __future__ import annotations

import argparse
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

#: (tag, attribute) pairs that the browser loads as the page opens.
LOADED = {("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src"),
          ("source", "src"), ("video", "src"), ("audio", "src")}  # fmt: skip


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, url)

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif name in ("href", "src"):
                self.refs.append((tag, name, value))


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def _target(site: Path, page: Path, url: str) -> Path:
    path = unquote(urlparse(url).path)
    base = site if path.startswith("/") else page.parent
    target = (base / path.lstrip("/")).resolve()
    return target / "index.html" if target.is_dir() or url.endswith("/") else target


def check(site: Path) -> tuple[list[str], int, int]:
    """(problems, internal links checked, external links seen)."""
    site = site.resolve()
    pages = {p: _parse(p) for p in site.rglob("*.html")}
    problems, internal, external = [], 0, 0
    for path, page in pages.items():
        where = path.relative_to(site)
        for tag, attr, url in page.refs:
            scheme = urlparse(url).scheme
            if scheme in ("http", "https") or url.startswith("//"):
                if (tag, attr) in LOADED:
                    problems.append(f"{where}: <{tag} {attr}> loads from the network: {url}")
                external += 1
                continue
            if scheme in ("mailto", "data", "javascript") or url.startswith("#") and not url[1:]:
                continue
            internal += 1
            file_part, anchor = urldefrag(url)
            target = path if not file_part else _target(site, path, file_part)
            if not target.exists():
                problems.append(f"{where}: broken link {url}")
            elif anchor and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(anchor) not in ids:
                    problems.append(f"{where}: no anchor #{anchor} in {target.relative_to(site)}")
    return problems, internal, external


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the built site's folder")
    args = parser.parse_args(argv)
    problems, internal, external = check(args.site)
    for problem in problems:
        print(problem)
    print(f"links: {internal} internal checked, {external} to other sites (not followed), "
          f"{len(problems)} problems")  # fmt: skip
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
