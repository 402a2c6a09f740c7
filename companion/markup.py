"""Participant text shown as text.

Messages, replies (a model may repeat whatever it was sent), remembered items and trace
snippets go into Gradio Markdown and Chatbot components, which render Markdown and some HTML:
`<img src=...>` or `![](url)` in a message made every browser showing it fetch that URL. Every
such string passes through `text` first, which makes HTML and Markdown syntax literal.
"""

from __future__ import annotations

import re

# Markdown punctuation that can start markup (links, images, emphasis, code, tables, math).
_MD = re.compile(r"([\\`*_\[\]|~$#])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def text(s) -> str:
    """`s` as literal text inside Markdown: shows the same characters, renders no markup."""
    s = _MD.sub(r"\\\1", "" if s is None else str(s))
    return "".join(_HTML.get(ch, ch) for ch in s)


def cell(s) -> str:
    """`text`, for a Markdown table cell (a line break would end the row)."""
    return text(s).replace("\n", " ")


def html_text(s) -> str:
    """`s` as literal text inside HTML (an error toast renders its message as HTML)."""
    return "".join(_HTML.get(ch, ch) for ch in ("" if s is None else str(s)))
