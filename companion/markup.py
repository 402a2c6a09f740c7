"""Participant text shown as text: the one rendering function for it, everywhere in the app.

Messages, replies (a model may repeat whatever it was sent), remembered items, trace snippets,
held actions, release text in the annotation panel and whatever an annotator typed go into Gradio
Markdown and Chatbot components, which render Markdown (marked, GitHub flavour) and some HTML:
`<img src=...>` or `![](url)` in a message made every browser showing it fetch that URL, and
`[a](javascript:...)` made a link that runs script. Every such string passes through `text`
first, which makes all of it literal:
- HTML: `&`, `<`, `>` become entities (no tag, no entity of the writer's);
- inline Markdown: `\\ ` `` ` `` `*` `_` `[` `]` `|` `~` `$` `#` are backslash-escaped (no emphasis, code,
  link, image, table, strikethrough, math, heading);
- block Markdown at a line's start: `-` `+` `=` and the `.` or `)` of `12.` are escaped (no list,
  thematic break or setext heading), and leading spaces and tabs become no-break spaces (no code
  block, where escapes would show);
- GitHub's bare autolinks: the `:` of `http://`, `https://`, `ftp://`, the `.` of `www.` and `@`
  are escaped (a URL or an address in a message is shown, not made a link).
`html_text` does the HTML part alone, for error toasts (which render HTML, not Markdown).
tests/test_markup_everywhere.py feeds generated hostile text through every panel's handlers.
"""

from __future__ import annotations

import re

_MD = re.compile(r"([\\`*_\[\]|~$#])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_INDENT = re.compile(r"^[ \t]+", re.M)
_BLOCK = re.compile(r"^([-+=])", re.M)
_ORDERED = re.compile(r"^(\d{1,9})([.)])", re.M)
_AUTOLINK = re.compile(r"(?i)(https?|ftp)(:)(?=//)|(www)(\.)|(@)")
NBSP = "\u00a0"


def _autolink(m: re.Match) -> str:
    if m.group(5):
        return "\\@"
    word, mark = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return f"{word}\\{mark}"


def text(s) -> str:
    """`s` as literal text inside Markdown: shows the same characters, renders no markup."""
    s = _MD.sub(r"\\\1", "" if s is None else str(s))
    s = _INDENT.sub(lambda m: m.group(0).replace("\t", NBSP * 4).replace(" ", NBSP), s)
    s = _BLOCK.sub(r"\\\1", s)
    s = _ORDERED.sub(r"\1\\\2", s)
    s = _AUTOLINK.sub(_autolink, s)
    return html_text(s)


def cell(s) -> str:
    """`text`, for a Markdown table cell (a line break would end the row)."""
    return text(s).replace("\n", " ")


def html_text(s) -> str:
    """`s` as literal text inside HTML (an error toast renders its message as HTML)."""
    return "".join(_HTML.get(ch, ch) for ch in ("" if s is None else str(s)))
