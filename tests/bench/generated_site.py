"""A generated documentation site of realistic pages, for crawl and index benchmarks.

The prose is real (SciFact abstracts from ../shared/data, read at run time, never copied into the repo); the
frame is what a documentation site wraps it in: a head with styles and inline analytics, a top navigation of
~60 links, a sidebar table of contents, a cookie banner, "edit this page" links and a footer, so a page
weighs ~40-70 KB of which a few KB are content. Page kinds, in the proportions of a real docs site:

- article: 2-10 abstracts as sections with a code block, a list and sometimes a table;
- release note: one to three sentences of real text (~100-600 characters), the page a reader still wants;
- index: a list of links with one-line descriptions (short, but what a reader would call content);
- app: a single-page-app shell whose text a script builds (an empty #root and a noscript warning), the only
  kind that needs a browser.

Deterministic: the same `count` and `seed` give the same site.
"""

from __future__ import annotations

import html
import json
import random
from pathlib import Path

from tests.factories import SHARED_DATA

KINDS = (("article", 0.74), ("release", 0.14), ("index", 0.10), ("app", 0.02))


def _abstracts() -> list[tuple[str, str]]:
    rows = []
    with (SHARED_DATA / "scifact" / "corpus.jsonl").open() as corpus:
        for line in corpus:
            item = json.loads(line)
            if len(item["text"]) > 400:
                rows.append((item["title"], item["text"]))
    return rows


def _frame(title: str, body: str, nav: str, toc: str, rng: random.Random) -> str:
    analytics = "".join(
        f"window.dataLayer=window.dataLayer||[];"
        f"function g{i}(){{dataLayer.push(arguments)}}g{i}('js',new Date());"
        for i in range(40)
    )
    styles = "".join(f".c{i}{{margin:{i % 7}px;padding:{i % 5}px;color:#{i:03x}}}" for i in range(300))
    footer = "".join(f'<li><a href="/company/{i}.html">Company link {i}</a></li>' for i in range(30))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} - Acme Docs</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="{html.escape(title)}">
<link rel="stylesheet" href="/static/theme.css"><style>{styles}</style>
<script>{analytics}</script></head>
<body><div class="cookie-banner" role="dialog"><p>We use cookies to improve your experience. By continuing to
browse you agree to our use of cookies.</p><button>Accept</button><button>Settings</button></div>
<header class="top"><a class="logo" href="/">Acme Docs</a><nav class="main-nav"><ul>{nav}</ul></nav>
<form class="search" action="/search.html"><input name="q" placeholder="Search the docs"></form></header>
<div class="layout"><aside class="sidebar"><nav aria-label="Contents"><ul>{toc}</ul></nav></aside>
<main id="content" class="content">
<nav class="breadcrumbs"><a href="/">Home</a> / <a href="/guide/">Guide</a></nav>
{body}
<div class="page-footer"><a href="https://example.invalid/edit/{rng.randint(1, 10**6)}">Edit this page</a>
<span>Last updated {rng.randint(1, 28)} March 2024</span><a href="#top">Back to top</a></div></main></div>
<footer class="site-footer"><ul>{footer}</ul><p>© 2024 Acme Inc. All rights reserved.</p></footer>
<script src="/static/bundle.js"></script></body></html>"""


def _article(rng: random.Random, abstracts: list[tuple[str, str]]) -> tuple[str, str]:
    picked = rng.sample(abstracts, rng.randint(2, 10))
    title = picked[0][0].rstrip(".")
    sections = [f"<h1>{html.escape(title)}</h1><p>{html.escape(picked[0][1])}</p>"]
    for i, (heading, text) in enumerate(picked[1:]):
        sections.append(f"<h2>{html.escape(heading.rstrip('.'))}</h2>")
        sentences = text.split(". ")
        half = max(1, len(sentences) // 2)
        sections.append(f"<p>{html.escape('. '.join(sentences[:half]))}.</p>")
        sections.append(f"<p>{html.escape('. '.join(sentences[half:]))}</p>")
        if i % 3 == 0:
            sections.append(
                f"<pre><code>client = acme.Client(timeout={rng.randint(1, 60)})\nclient.run()</code></pre>"
            )
        if i % 4 == 1:
            rows = "".join(
                f"<tr><td>option_{j}</td><td>{rng.randint(1, 100)}</td><td>yes</td></tr>" for j in range(5)
            )
            sections.append(f"<table><tr><th>Name</th><th>Default</th><th>Required</th></tr>{rows}</table>")
    return title, "<article>" + "".join(sections) + "</article>"


def _release(rng: random.Random, abstracts: list[tuple[str, str]]) -> tuple[str, str]:
    _, text = rng.choice(abstracts)
    sentences = text.split(". ")
    # Real release notes run from one line ("Fixed a crash when ...") to a short paragraph.
    note = ". ".join(sentences[: rng.randint(1, 3)]).rstrip(".") + "."
    version = f"{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
    title = f"Release {version}"
    return title, f"<article><h1>{title}</h1><p>{html.escape(note[:600])}</p></article>"


def _index(rng: random.Random, abstracts: list[tuple[str, str]], names: list[str]) -> tuple[str, str]:
    items = "".join(
        f'<li><a href="/{name}">{html.escape(heading.rstrip("."))}</a>: '
        f"{html.escape(text.split('. ')[0])}.</li>"
        for name, (heading, text) in zip(rng.sample(names, 6), rng.sample(abstracts, 6), strict=True)
    )
    title = f"Topic index {rng.randint(1, 99)}"
    return title, f"<article><h1>{title}</h1><p>Pages in this section:</p><ul>{items}</ul></article>"


def _app(rng: random.Random, abstracts: list[tuple[str, str]]) -> tuple[str, str]:
    heading, text = rng.choice(abstracts)
    payload = json.dumps({"title": heading, "text": text})
    body = (
        '<div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript>'
        f"<script>const d={payload};document.getElementById('root').innerHTML="
        "'<h1>'+d.title+'</h1><p>'+d.text+'</p>';</script>"
    )
    return heading.rstrip("."), body


def generate(root: Path, *, count: int = 300, seed: int = 7) -> list[str]:
    """Write the site under `root`; returns the page paths (relative, e.g. "p/0001.html")."""
    rng = random.Random(seed)
    abstracts = _abstracts()
    names = [f"p/{i:04d}.html" for i in range(count)]
    nav = "".join(f'<li><a href="/{rng.choice(names)}">Section {i}</a></li>' for i in range(60))
    toc = "".join(f'<li><a href="/{rng.choice(names)}">Chapter {i}: topic</a></li>' for i in range(100))
    (root / "p").mkdir(parents=True, exist_ok=True)
    kinds = [kind for kind, _ in KINDS]
    weights = [weight for _, weight in KINDS]
    for name in names:
        kind = rng.choices(kinds, weights)[0]
        if kind == "article":
            title, body = _article(rng, abstracts)
        elif kind == "release":
            title, body = _release(rng, abstracts)
        elif kind == "index":
            title, body = _index(rng, abstracts, names)
        else:
            title, body = _app(rng, abstracts)
        (root / name).write_text(_frame(title, body, nav, toc, rng), encoding="utf-8")
    return names
