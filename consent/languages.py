"""Which language a sentence is written in, as far as the name rules need to know, and the name
rules for sentences not written in English.

The recognizers' name rules (`consent.recognizers.name_hits`) read English: a capitalized word in
mid-sentence that is no English word is a name, a word of another script inside an English sentence
is a name ("lunch with Александра tomorrow"). Applied to a sentence *written* in German, Greek or
Japanese they replace the sentence: every German noun is capitalized, every Greek word is "another
script". So each sentence gets a mode first:

- ``en``: Latin letters, and a fifth of its words are English function words or chat shorthand
  ("the", "lol", "u"), or half of its words of four letters or more are English words; or it has
  fewer than four words. The English rules apply.
- ``latin``: Latin letters, a sentence in another language (German, Spanish ...). A word is a name
  only if some name list knows it *and* it is capitalized, or a capitalized word in mid-sentence
  when the sentence does not capitalize its nouns; NER (an English model) is believed only on such
  words.
- a script's name (``GREEK``, ``CYRILLIC``, ``HAN`` ...): most of its letters are of that script.
  Cased scripts (Greek, Cyrillic, Armenian): a capitalized word in mid-sentence or a known name.
  Scripts without case and with spaces (Arabic, Hebrew, Devanagari, Tamil, Thai's words ...): a word
  a name list knows, also after a one-letter prefix (Arabic و ب ل ف, ال; Hebrew ו ה ב ל מ ש כ). Han,
  kana and Hangul: a surname followed by a given name of the same locale's lists, or a name before an
  honorific (さん, 様, 先生, 씨, 님 ...). NER is not believed there.

A run of another script that is at most four words inside a Latin sentence stays a name, as before:
that is how people write a friend's name in their own script.
"""

from __future__ import annotations

import importlib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

CASED = {"GREEK", "CYRILLIC", "ARMENIAN", "COPTIC", "GLAGOLITIC"}
IDEOGRAPHIC = {"CJK", "HIRAGANA", "KATAKANA", "HANGUL"}
# chat shorthand counted as English when deciding a sentence's language
SHORTHAND = set("""lol lmao omg u ur r n ya yeah yep nope ok okay pls plz thx ty tmrw tmr tho gonna wanna gotta
idk btw tbh imo imho brb ttyl haha hahaha hehe ikr smh rn bc cuz coz k kk np nvm wtf jk fyi asap""".split())
EMBEDDED_RUN = 4  # words of another script inside a Latin sentence still read as a name

# function words of the languages that capitalize every noun
_GERMANIC = set("der die das den dem des und ich nicht ist mit auf für weil wir ihr sie ein eine einen "
                "auch noch schon aber oder wenn dass zum zur vom beim bin sind war hat habe".split())
# weekdays and months that cased scripts capitalize (Greek does; Russian does not, harmless)
CALENDAR = set("""δευτέρα τρίτη τετάρτη πέμπτη παρασκευή σάββατο κυριακή ιανουάριος φεβρουάριος μάρτιος
απρίλιος μάιος ιούνιος ιούλιος αύγουστος σεπτέμβριος οκτώβριος νοέμβριος δεκέμβριος ιανουαρίου φεβρουαρίου
μαρτίου απριλίου μαΐου ιουνίου ιουλίου αυγούστου σεπτεμβρίου οκτωβρίου νοεμβρίου δεκεμβρίου
понедельник вторник среда четверг пятница суббота воскресенье январь февраль март апрель май июнь июль
август сентябрь октябрь ноябрь декабрь""".split())
_CALENDAR_PLAIN = frozenset("".join(c for c in unicodedata.normalize("NFKD", w) if not unicodedata.combining(c))
                            for w in CALENDAR)
_SENTENCE_END = re.compile(r"[.!?\n…。！？؟।]+")
_PREFIX_AR = ("ال", "وال", "بال", "لل", "و", "ب", "ل", "ف")
_PREFIX_HE = ("ו", "ה", "ב", "ל", "מ", "ש", "כ")
_HONORIFIC_JA = ("さん", "様", "さま", "くん", "君", "ちゃん", "先生", "氏", "殿", "先輩")
_HONORIFIC_KO = ("씨", "님", "선생님", "선배")
_PARTICLE_KO = ("에게서", "한테서", "이랑", "에게", "한테", "하고", "은", "는", "이", "가", "을", "를", "와", "과",
                "랑", "의", "도", "께서", "께")
_HONORIFIC_ZH = ("先生", "女士", "小姐", "老师", "老師", "同学", "同學")


def script(ch: str) -> str:
    """The script of one character, by its Unicode name's first word ("LATIN", "GREEK", "CJK" ...)."""
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return ""
    return "LATIN" if "LATIN" in name else name.split()[0]


def is_letter(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LM"


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    mode: str  # "en", "latin", or a script name

    @property
    def english(self) -> bool:
        return self.mode == "en"


def _dominant(text: str) -> tuple[str, float]:
    counts: dict[str, int] = {}
    for c in text:
        if unicodedata.category(c)[0] == "L":
            s = script(c)
            counts[s] = counts.get(s, 0) + 1
    if not counts:
        return "LATIN", 1.0
    best = max(counts, key=counts.get)
    return best, counts[best] / sum(counts.values())


def sentences(text: str, english_word) -> list[Sentence]:
    """The sentences of `text` with their modes. `english_word(casefolded) -> bool` is the
    recognizers' English check (passed in: this module loads no word list of its own)."""
    out, a = [], 0
    for m in list(_SENTENCE_END.finditer(text)) + [None]:
        b = m.end() if m else len(text)
        if b > a:
            out.append(Sentence(a, b, _mode(text[a:b], english_word)))
        a = b
    return out or [Sentence(0, len(text), "en")]


def _mode(s: str, english_word) -> str:
    dom, share = _dominant(s)
    if dom != "LATIN" and share > 0.5:
        return dom
    words = [w.casefold() for w in re.findall(r"[^\W\d_]+(?:['’][^\W\d_]+)?", s)
             if all(script(c) == "LATIN" for c in w)]
    if len(words) < 4:
        return "en"
    function = sum(1 for w in words if w in SHORTHAND or w in _stop_words())
    long = [w for w in words if len(w) >= 4]
    content = sum(1 for w in long if english_word(w)) / len(long) if long else 1.0
    return "en" if function / len(words) >= 0.2 or content >= 0.5 else "latin"


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def mode_at(sents: list[Sentence], i: int) -> Sentence:
    for s in sents:
        if s.start <= i < s.end:
            return s
    return sents[-1]


def capitalizes_nouns(text: str, sent: Sentence) -> bool:
    """More than one in six of the mid-sentence words capitalized: German-style, where a capital
    says nothing about a name."""
    words = re.findall(r"[^\W\d_]+", text[sent.start:sent.end])
    if sum(1 for w in words if w.casefold() in _GERMANIC) >= 2:
        return True  # German, Luxembourgish: "weil der Zug um sechs fährt" has one noun in ten words
    words = words[1:]
    if len(words) < 4:
        return False
    return sum(1 for w in words if w[0].isupper()) / len(words) > 1 / 6


# --- gazetteers in scripts without spaces --------------------------------------------------------


def _provider_list(locale: str, attr: str) -> list[str]:
    try:
        p = importlib.import_module(f"faker.providers.person.{locale}").Provider
    except ImportError:
        return []
    v = p.__dict__.get(attr) or getattr(p, attr, None) or []
    return [n for n in v if isinstance(n, str)]


@lru_cache(maxsize=1)
def east_asian_names() -> tuple[frozenset[str], frozenset[str]]:
    """(surnames, given names) written in Han, kana and Hangul, from Faker's zh_CN, zh_TW, ja_JP and
    ko_KR person providers (one and two characters are names here, unlike the Latin lists)."""
    last, first = set(), set()
    for loc in ("zh_CN", "zh_TW", "ja_JP", "ko_KR"):
        last |= set(_provider_list(loc, "last_names"))
        for a in ("first_names", "first_names_male", "first_names_female"):
            first |= set(_provider_list(loc, a))
    return frozenset(last), frozenset(first)


def _east_asian_hits(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """Names in a Han/kana/Hangul stretch text[a:b]: surname + given name, or a word before an
    honorific."""
    last, first = east_asian_names()
    out = []
    seg = text[a:b]
    i = 0
    while i < len(seg):
        hit = None
        for ln in (2, 1):
            sur = seg[i:i + ln]
            if len(sur) == ln and sur in last:
                for fl in (2, 1):
                    giv = seg[i + ln:i + ln + fl]
                    if len(giv) == fl and giv in first:
                        hit = (i, i + ln + fl)
                        break
                for gl in (0, 1, 2):  # "佐藤さん", "張偉さん": a surname, a given name of any kind, an honorific
                    if hit is None and seg[i + ln + gl:].startswith(_HONORIFIC_JA + _HONORIFIC_ZH + _HONORIFIC_KO):
                        hit = (i, i + ln + gl)
            if hit:
                break
        if hit:
            out.append((a + hit[0], a + hit[1]))
            i = hit[1]
        else:
            i += 1
    # katakana or Hangul words before an honorific: "マリアさん", "지수 씨"
    for m in re.finditer(r"([\u30A0-\u30FF]{2,}|[\uAC00-\uD7A3]{2,4})\s?(?=" +
                         "|".join(_HONORIFIC_JA + _HONORIFIC_KO) + ")", seg):
        out.append((a + m.start(1), a + m.end(1)))
    return out


def _korean_word(w: str, last: frozenset[str], first: frozenset[str]) -> bool:
    stem = w
    for p in _PARTICLE_KO + _HONORIFIC_KO:
        if stem.endswith(p) and len(stem) - len(p) >= 2:
            stem = stem[: -len(p)]
            break
    if stem in first:
        return True
    return 2 <= len(stem) <= 4 and stem[0] in last and stem[1:] in first


def native_name_spans(text: str, words, sent: Sentence, gazetteer) -> list[tuple[int, int]]:
    """Name spans in a sentence written in a non-Latin script. `words` are the recognizers' words
    inside the sentence (objects with start, end, text, lower, sent_start); `gazetteer(casefolded)`
    says whether a name list knows the word."""
    mode = sent.mode
    out: list[tuple[int, int]] = []
    if mode in IDEOGRAPHIC:
        last, first = east_asian_names()
        for w in words:
            if all(script(c) == "HANGUL" for c in w.text if unicodedata.category(c)[0] == "L"):
                if _korean_word(w.text, last, first):
                    out.append((w.start, w.end))
        out += _east_asian_hits(text, sent.start, sent.end)
        return out
    for w in words:
        letters = [c for c in w.text if unicodedata.category(c)[0] == "L"]
        if not letters or all(script(c) == "LATIN" for c in letters):
            continue
        low = w.lower
        if low in CALENDAR or unaccented(low) in _CALENDAR_PLAIN:
            continue
        if mode in CASED and w.text[0].isupper() and not w.sent_start and not w.text.isupper():
            out.append((w.start, w.end))
        elif (mode not in CASED or w.text[0].isupper()) and (gazetteer(low) or gazetteer(unaccented(low))):
            out.append((w.start, w.end))
        elif mode == "ARABIC" and any(low.startswith(p) and gazetteer(low[len(p):]) for p in _PREFIX_AR):
            out.append((w.start, w.end))
        elif mode == "HEBREW" and any(low.startswith(p) and gazetteer(low[len(p):]) for p in _PREFIX_HE):
            out.append((w.start, w.end))
    return out


def unaccented(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))
