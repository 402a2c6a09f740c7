"""Hostile text, generated: HTML that fetches or runs something, Markdown images and links with every
scheme, the Markdown and GitHub constructs a renderer turns into something else than the typed
characters (headings, lists, code, tables, math, autolinks), each inside a set of contexts
(inline, its own block, in code, in emphasis, after a backslash, in a list, indented, in a quote).
And the check that a string given to a Markdown component renders inert and shows the text."""

from __future__ import annotations

import html.parser
import itertools
import random
import re

TARGETS = ["http://127.0.0.1:9/pixel.png", "https://evil.example/x.png", "//evil.example/x", "javascript:alert(1)",
           "JaVaScRiPt:alert(document.cookie)", " javascript:alert(1)", "data:image/svg+xml;base64,PHN2Zz4=",
           "vbscript:msgbox(1)", "jav&#x09;ascript:alert(1)", "file:///etc/passwd"]

HTML = ['<img src="{u}">', "<img src={u} onerror=alert(1)>", "<IMG SRC='{u}'>", "<img/src={u}>",
        '<img srcset="{u} 1x">', '<svg onload="alert(1)"><image href="{u}"/></svg>', '<iframe src="{u}"></iframe>',
        '<script src="{u}"></script>', "<script>alert(1)</script>", '<a href="{u}">click</a>',
        '<link rel=stylesheet href="{u}">', "<style>@import url({u});</style>", '<video src="{u}" autoplay></video>',
        '<audio src="{u}" autoplay>', '<object data="{u}"></object>', '<embed src="{u}">',
        '<input type=image src="{u}">', '<div style="background:url({u})">x</div>',
        '<math><mtext><img src="{u}"></mtext></math>', "<details open ontoggle=alert(1)>", '<<img src="{u}">>',
        '<img src="{u}"', '&lt;img src="{u}"&gt;', '<!--<img src="{u}">-->', '<img\nsrc="{u}">', "<b onmouseover=alert(1)>x</b>"]

MARKDOWN = ["![]({u})", '![x]({u} "t")', "![x](<{u}>)", "[a]({u})", "[a]( {u} )", "[![x]({u})]({u})",
            "[a][r]\n\n[r]: {u}", "![x][r]\n\n[r]: {u}", "<{u}>", "{u}", "[a](<{u}>)", "![x]({u}){{width=1}}"]

STRUCTURE = ["# heading", "## heading", "**bold**", "__bold__", "_em_", "*em*", "`code`", "```\nfence\n```",
             "~~~\nfence\n~~~", "| a | b |\n|---|---|\n| c | d |", "---", "***", "text\n===", "text\n---", "- item",
             "+ item", "* item", "1. item", "2) item", "> quote", "    indented code", "\tindented", "$$x^2$$", "$x$",
             "&amp; &#60;img&#62;", "\\*not bold\\*", "a trailing backslash \\", "line  \nbreak", "~~strike~~",
             "[^1]\n\n[^1]: note", "www.evil.example/x.png", "mail evil@example.com", "<http://x.example>",
             "\u202eRTL override", "zero\u200bwidth <i\u200bmg src=x>", "emoji :smile:", "h<sub>2</sub>o"]

CONTEXTS = ["{p}", "before {p} after", "\n\n{p}\n\n", "`{p}`", "**{p}**", "[{p}]", "\\{p}", "{p} {p}", "- {p}",
            "> {p}", "    {p}", "<b>{p}</b>", "1. {p}", "# {p}", "| {p} |"]


def payloads() -> list[str]:
    """Every payload: each HTML and Markdown form with each target, and each structural form."""
    out = [t.format(u=u) for t in HTML + MARKDOWN for u in TARGETS]
    return out + STRUCTURE


def variants(n: int = 400, seed: int = 0) -> list[str]:
    """`n` hostile strings: every payload at least once (in a context chosen by the seed), then
    payload x context combinations drawn without repeats."""
    rng = random.Random(seed)
    base = list(dict.fromkeys(payloads()))
    out, seen = [], set()
    for p in base:
        for c in rng.sample(CONTEXTS, len(CONTEXTS)):
            v = c.format(p=p)
            if v not in seen:
                seen.add(v)
                out.append(v)
                break
    pairs = list(itertools.product(base, CONTEXTS))
    rng.shuffle(pairs)
    for p, c in pairs:
        if len(out) >= n:
            break
        v = c.format(p=p)
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


# --- the check -----------------------------------------------------------------------------------

SAFE_TAGS = {"p", "br", "strong", "em", "code", "pre", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
             "blockquote", "table", "thead", "tbody", "tr", "th", "td", "del", "s", "a"}
OWN_LINK = re.compile(r"^download/[0-9a-f]{64}$")  # the app's own one-time download links
# GitHub's bare autolinks (marked, gfm), which markdown-it's CommonMark does not make: looked for in
# the source, unescaped
AUTOLINK = re.compile(r"(?i)(?<!\\)\b(?:https?|ftp)://|(?<![\\\w])www\.|[\w.+-](?<!\\)@[\w-]+\.")


def _renderer():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.validateLink = lambda url: True  # render every link and image: the browser's renderer may
    return md


_MD = None


def render(md: str) -> str:
    """Markdown to HTML as a CommonMark renderer with raw HTML on does it (as the browser gets it)."""
    global _MD
    if _MD is None:
        _MD = _renderer()
    return _MD.render(md)


class _Walk(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in SAFE_TAGS:
            self.problems.append(f"<{tag}> element")
        for k, v in attrs:
            if tag == "a" and k == "href" and OWN_LINK.match(v or ""):
                continue
            if tag in ("td", "th") and k == "style" and re.fullmatch(r"text-align:(left|right|center)", v or ""):
                continue
            if tag == "ol" and k == "start":
                continue
            if tag == "code" and k == "class" and (v or "").startswith("language-"):
                continue
            self.problems.append(f"attribute {k}={v!r} on <{tag}>")
        if tag == "a" and not any(k == "href" and OWN_LINK.match(v or "") for k, v in attrs):
            self.problems.append("a link")

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


def inert(md: str) -> list[str]:
    """What in `md` a Markdown component would turn into markup that fetches, links or runs
    something (empty: nothing)."""
    w = _Walk()
    w.feed(render(md))
    w.close()
    problems = list(w.problems)
    if AUTOLINK.search(md):
        problems.append(f"a bare autolink: {AUTOLINK.search(md).group(0)!r}")
    return problems


def shown(md: str) -> str:
    """The text a reader sees of `md`, whitespace folded."""
    w = _Walk()
    w.feed(render(md))
    w.close()
    return fold("".join(w.text))


def fold(s: str) -> str:
    return " ".join(s.replace("\u00a0", " ").split())


def html_inert(h: str) -> list[str]:
    """For a string shown as HTML (an error toast): no element at all."""
    w = _Walk()
    w.feed(h)
    w.close()
    return [p for p in w.problems if "element" in p or "attribute" in p or "link" in p]
