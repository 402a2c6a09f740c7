"""What a release says about people (issue 22 items 10, 11, 16; issue 23 build items 3, 4, 5).

Through `companion export` and the export function, on the product's own output (echo chats,
derived memory, feedback rows, the companion's reminder lines): one surrogate per person across
every file, kinds and relation words kept, replace instead of refuse, a refusal the researcher can
act on (`--exclude`, `--allow`), every timestamp and written date shifted, identifiers of other
countries and forms replaced (generated, with real check digits).
"""

import json
import re
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from companion.cli import main
from consent import export as exporter
from consent import pseudonymize, recognizers, records, timeshift
from consent.releasecheck import check as release_check
from memory import feedback, messages

sys.path.insert(0, str(Path(__file__).parent))
import anonymization_bench  # noqa: E402
import identifier_generators as gen  # noqa: E402


def run(*args, **kw):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, **kw)


def rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def pool_of(surrogate: str) -> str | None:
    for kind, pool in (("PERSON", pseudonymize.PERSON_POOL), ("PLACE", pseudonymize.PLACE_POOL),
                       ("ORG", pseudonymize.ORG_POOL)):
        if surrogate in pool:
            return kind
    return None


CHAT = ["My sister Lena moved to Porto last month.", "On Tuesdays I go swimming with Marek.",
        "Dessert was amazing at the new place.", "I work at Brightlane Logistics as an analyst.",
        "My brother Kwame is a nurse in Accra.", "The postcode there is 75009."]


def test_cli_export_one_surrogate_per_person_in_every_file_kinds_and_relation_words_kept(home, tmp_path):
    """Items 22.10 / 23.5: "My sister Lena" became "My Coldwater Group"; a claim carried another
    surrogate than the conversation; weekdays and "Dessert" became people; the postcode message
    refused the export (22.11). The fresh export passes its own `release check`."""
    run("consent", "accept", "-p", "mariaa")
    assert run("chat", "-p", "mariaa", "--model", "echo", input="\n".join(CHAT) + "\n").exit_code == 0
    assert run("memory", "consolidate", "-p", "mariaa").exit_code == 0
    out = tmp_path / "rel"
    r = run("export", "--out", str(out))
    assert r.exit_code == 0, r.output
    conv = rows(out / "U01" / "conversation.jsonl")
    said = [c["text"] for c in conv if c["sender"] == "user"]
    m = re.fullmatch(r"My sister (\w+) moved to ([\w ]+) last month\.", said[0])
    assert m and pool_of(m.group(1)) == "PERSON" and pool_of(m.group(2)) == "PLACE", said[0]
    lena, porto = m.groups()
    swim = re.fullmatch(r"On Tuesdays I go swimming with (\w+)\.", said[1])
    assert swim and pool_of(swim.group(1)) == "PERSON", said[1]
    assert said[2] == "Dessert was amazing at the new place."
    work = re.fullmatch(r"I work at (.+) as an analyst\.", said[3])
    assert work and pool_of(work.group(1)) == "ORG", said[3]
    kwame = re.fullmatch(r"My brother (\w+) is a nurse in ([\w ]+)\.", said[4])
    assert kwame and pool_of(kwame.group(1)) == "PERSON" and pool_of(kwame.group(2)) == "PLACE", said[4]
    assert "75009" not in said[5] and re.fullmatch(r"The postcode there is \[postcode \d+\]\.", said[5])
    # the companion's echo carries the same surrogates
    assert all(c["text"].count(lena) for c in conv if c["sender"] == "companion" and "sister" in c["text"])
    # the claims name the same people and places as the conversation, with the same surrogates
    claims = [c["text"] for c in rows(out / "U01" / "profile.jsonl")]
    assert any(lena in c and "sister" in c.casefold() for c in claims), claims
    assert any(porto in c for c in claims), claims
    assert any(work.group(1) in c for c in claims), claims
    assert not any(w in " ".join(claims) for w in ("Lena", "Porto", "Kwame", "Accra", "Brightlane"))
    # a person is never an organisation or a place anywhere in the release
    text = "\n".join(f.read_text(encoding="utf-8") for f in out.rglob("*.json*"))
    assert f"sister {lena}" in text and not re.search(r"[Ss]ister (?:" + "|".join(
        map(re.escape, pseudonymize.ORG_POOL + pseudonymize.PLACE_POOL)) + ")", text)
    check = run("release", "check", str(out))
    assert check.exit_code == 0, check.output


def test_refusal_names_the_text_and_the_rule_and_exclude_or_allow_proceed(home, tmp_path, monkeypatch):
    """Item 23.3: what survives replacement is shown in full, with file, line, field and the rule
    that found it, and how to proceed; `--exclude` leaves the message out (counted in the
    manifest), `--allow` keeps a reviewed text (recorded with who allowed it)."""
    run("consent", "accept", "-p", "mariaa")
    run("chat", "-p", "mariaa", "--model", "echo", input="a quiet morning\nlunch with Priyanka today\n")
    real = pseudonymize.Pseudonymizer.surrogate

    def failing(self, kind, original, plan=None):  # a replacement that does not take
        return original if original == "Priyanka" else real(self, kind, original, plan)

    monkeypatch.setattr(pseudonymize.Pseudonymizer, "surrogate", failing)
    r = run("export", "--out", str(tmp_path / "r1"))
    assert r.exit_code == 2 and not (tmp_path / "r1").exists()
    assert re.search(r"identifiers: U01/conversation.jsonl line 3, field 'text': (PERSON|ORG) 'Priyanka' "
                     r"\(found by the (NER model \(spaCy\)|name lists \(first names, surnames\))\) survives replacement",
                     r.output), r.output
    assert "U01/conversation.jsonl line 3 (mariaa, day1-3): --allow Priyanka  or  --exclude day1-3" in r.output

    r = run("export", "--out", str(tmp_path / "r2"), "--exclude", "day1-3")
    assert r.exit_code == 2 and "(mariaa, day1-4)" in r.output  # the echo reply repeats the name: named too
    r = run("export", "--out", str(tmp_path / "r2"), "--exclude", "day1-3", "--exclude", "mariaa:day1-4")
    assert r.exit_code == 0, r.output
    conv = rows(tmp_path / "r2" / "U01" / "conversation.jsonl")
    assert [c["dayid"] for c in conv] == ["day1-1", "day1-2"]
    manifest = json.loads((tmp_path / "r2" / "manifest.json").read_text())
    assert manifest["excluded"] == {"U01": {"messages": 2, "claims": 0}} and manifest["counts"]["U01"]["messages"] == 2
    assert "(2 messages, 0 claims left out)" in r.output

    r = run("export", "--out", str(tmp_path / "r3"), "--allow", "Priyanka", "--allowed-by", "rita")
    assert r.exit_code == 0, r.output
    manifest = json.loads((tmp_path / "r3" / "manifest.json").read_text())
    assert manifest["allowed"] == [{"text": "Priyanka", "by": "rita"}]
    assert "lunch with Priyanka today" in (tmp_path / "r3" / "U01" / "conversation.jsonl").read_text()
    assert release_check(tmp_path / "r3").failed("identifiers") == []  # the check reads the manifest's allowed

    assert run("export", "--out", str(tmp_path / "r4"), "--exclude", "day9-9").exit_code == 2
    assert "mariaa has no message or claim day9-9" in run("export", "--out", str(tmp_path / "r4"), "--exclude",
                                                           "day9-9").output


def test_a_reissue_leaves_out_and_allows_the_same(store, tmp_path):
    for p in ("ana", "bob"):
        records.accept(store, p, tz="UTC")
        messages.append_many(store, p, [dict(sender="user", text=t, context="personal",
                                             ts=datetime(2026, 3, 2, 9, i, tzinfo=timezone.utc))
                                        for i, t in enumerate(["a calm day", "Dessert Storm is my band"])])
    r = exporter.export(store, tmp_path / "r1", seed=2, exclude=["ana:day1-1"], allow=["Dessert Storm"],
                        allowed_by="rita")
    again = exporter.export(store, tmp_path / "r2", reissue=r["release"])
    for d in ("r1", "r2"):
        m = json.loads((tmp_path / d / "manifest.json").read_text())
        assert m["allowed"] == [{"text": "Dessert Storm", "by": "rita"}] and list(m["excluded"].values()) == [
            {"messages": 1, "claims": 0}]
    assert again["participants"] == r["participants"]
    ledger = json.loads(store.conn.execute("SELECT params FROM release_ledger WHERE release=?",
                                           (r["release"],)).fetchone()[0])
    assert "ana" not in json.dumps(ledger)  # the ledger outlives erasure: excluded messages by U-number


# --- time, everywhere --------------------------------------------------------------------------

T0 = datetime(2026, 12, 1, 8, 18, 11, 237184, tzinfo=timezone.utc)
DATED = [("user", "see you on 2026-12-14, ok?"), ("companion", "Noted."),
         ("user", "Lena arrives 14/12 and leaves on December 20th"), ("companion", "Lovely."),
         ("user", "the form says 14.12.2026"), ("companion", "Scheduled: remind you: water the plants (Wed 02 Dec, 08:00)."),
         ("user", "pay it by the 18th."), ("companion", "I'll remind you on Friday, December 18."),
         ("user", "2026-12-20"), ("companion", "Noted.")]  # a text that is only a date moves once


def _expected(shift: int) -> dict[str, str]:
    """The dates of DATED, moved by `shift` days, computed here by hand."""
    d = lambda y, m, dd: date(y, m, dd) + timedelta(days=shift)  # noqa: E731
    a, b, c, e, f = d(2026, 12, 14), d(2026, 12, 20), d(2026, 12, 2), d(2026, 12, 18), d(2026, 12, 18)
    return {"see you on 2026-12-14": f"see you on {a.isoformat()}",
            "arrives 14/12": f"arrives {a.day}/{a.month}",
            "December 20th": f"{b.strftime('%B')} {b.day}{'th' if 10 <= b.day <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(b.day % 10, 'th')}",
            "14.12.2026": f"{a.day}.{a.month}.{a.year}",  # zero-padded only where it was written so
            "Wed 02 Dec": f"{c.strftime('%a')} {c.day:02d} {c.strftime('%b')}",
            "by the 18th": f"by the {e.day}{'th' if 10 <= e.day <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(e.day % 10, 'th')}",
            "Friday, December 18": f"{f.strftime('%A')}, {f.strftime('%B')} {f.day}"}


def test_every_timestamp_and_every_written_date_in_a_release_is_shifted(store, tmp_path):
    """Item 23.4: feedback rows carried the real time to the microsecond next to shifted
    conversation times; "December 14th" and "Wed 02 Dec" survived in the text. Every value of
    every file is scanned: a timestamp is a real one moved by the participant's weeks, cut to the
    minute; a date in a text is the written one moved by the same weeks; no real date is left."""
    records.accept(store, "ana", tz="Europe/Madrid")
    messages.append_many(store, "ana", [dict(sender=s, text=t, context="personal", ts=T0 + timedelta(minutes=3 * i,
                                                                                                   seconds=7 * i))
                                        for i, (s, t) in enumerate(DATED)])
    feedback.record(store, "ana", "day1-2", "up", via="app")
    feedback.record(store, "ana", "day1-6", "down", tag="forgot", via="app")
    exporter.export(store, tmp_path / "rel", seed=1)
    shift = store.conn.execute("SELECT shift_days FROM release_keys WHERE participant='ana'").fetchone()[0]
    real = [m.ts for m in messages.read(store, "ana", messages.next_ordinal(store, "ana"))]
    real += [f.created_at for f in feedback.history(store, "ana")]
    allowed = {(datetime.fromisoformat(t) + timedelta(days=shift)).astimezone(timezone.utc)
               .replace(second=0, microsecond=0).isoformat() for t in real}
    real_days = {datetime.fromisoformat(t).astimezone(timezone.utc).date().isoformat() for t in real}
    files = [f for f in (tmp_path / "rel").rglob("*") if f.is_file()]
    assert {f.name for f in files} >= {"manifest.json", "conversation.jsonl", "feedback.jsonl"}
    seen_ts = []
    for f in files:
        raw = f.read_text(encoding="utf-8")
        for day in real_days:
            assert day not in raw, f"{f.name} holds the real date {day}"
        values = rows(f) if f.suffix == ".jsonl" else [json.loads(raw)]
        for v in values:
            for t in (t for t in timeshift.timestamps(v) if "T" in t):  # a date alone is a text (below)
                assert t in allowed, f"{f.name}: {t} is not a real time moved by {shift} days"
                seen_ts.append(t)
    fb = rows(tmp_path / "rel" / "U01" / "feedback.jsonl")
    assert [r["at"] for r in fb] == [timeshift.shift_timestamp(f.created_at, shift)
                                     for f in feedback.history(store, "ana")]
    assert len(seen_ts) == len(DATED) + 2
    conv = rows(tmp_path / "rel" / "U01" / "conversation.jsonl")
    assert conv[-2]["text"] == (date(2026, 12, 20) + timedelta(days=shift)).isoformat()
    text = " ".join(r["text"] for r in conv)
    for before, after in _expected(shift).items():
        assert after in text, (before, after, text)
        assert before not in text


@pytest.mark.parametrize("text,days,want", [
    ("see you on 2026-12-14", -7, "see you on 2026-12-07"),
    ("born 14/03/1988", -28, "born 15/02/1988"),
    ("on 14/12 then", -35, "on 9/11 then"),
    ("on 12/14 then", -35, "on 11/9 then"),  # month first: the day is over 12
    ("3/4 of the cake", -35, "3/4 of the cake"),  # a fraction
    ("Update 2.4.1 broke it", -35, "Update 2.4.1 broke it"),
    ("(Wed 02 Dec, 08:00)", -35, "(Wed 28 Oct, 08:00)"),
    ("the 14th of December", -14, "the 30th of November"),
    ("I may 2 times", -7, "I may 2 times"),
    ("on the 3rd, ok?", -7, "on the 26th, ok?"),
    ("the 3rd floor", -7, "the 3rd floor"),
    ("in March, on Tuesdays", -700, "in March, on Tuesdays"),
])
def test_dates_written_in_text(text, days, want):
    assert timeshift.shift_text(text, days, datetime(2026, 12, 1), day_first=True) == want


# --- identifiers of other countries and forms ---------------------------------------------------

@pytest.mark.parametrize("form", sorted(f for f in gen.FORMS if f in gen.NUMBER_CUES))
def test_national_numbers_are_found_by_their_check_digits_and_a_wrong_digit_is_not_that_number(form):
    import random

    rng = random.Random(f"test:{form}")
    for _ in range(5):
        x, kind = gen.FORMS[form](rng)
        hits = recognizers.scan(f"here it is: {x}, thanks")
        assert any(h.text == x for h in hits), (x, hits)
        assert kind in {h.kind for h in hits} or form in ("CARD",), (x, hits)
        if form == "US_SSN":
            continue  # no check digit
        # one digit changed: no longer that number (it may still be replaced as a long number)
        d = next(i for i in range(len(x) - 1, -1, -1) if x[i].isdigit())
        wrong = x[:d] + str((int(x[d]) + 1) % 10) + x[d + 1:]
        assert kind not in {h.kind for h in recognizers.scan(f"here it is: {wrong}, thanks")}


def test_generated_identifiers_do_not_survive_an_export_and_ordinary_words_stay():
    """Item 22.16, the class: 19 generated forms (another seed than the bench's default),
    measured before this work at 241 + 9 survivors of 400 and 102 of 1755 ordinary words
    replaced; the bounds here are the numbers after it, with a little room."""
    r = anonymization_bench.run("generated", n=190, seed=11)
    assert r["planted"] == 190
    assert r["gate_refused"] == 0
    assert r["verbatim_survivors"] + r["partial_survivors"] <= 3, r["survivors"]
    numbers = [s for s in r["survivors"] if not s.startswith(("LOWERCASE_SURNAME", "NICKNAME", "SCRIPT_NAME"))]
    assert numbers == []  # every number with a check digit or a cue is replaced
    assert r["ordinary_words_replaced"] <= 0.05 * r["ordinary_words"], r["replaced"]


def test_second_planted_set():
    """tests/data/planted_identifiers_v2.jsonl (written before the recognizers changed: 29 + 3
    survivors of 71 then) and ordinary_messages_v2.txt (34 of 496 words replaced then)."""
    r = anonymization_bench.run("v2")
    assert r["planted"] == 71 and r["gate_refused"] == 0
    assert r["verbatim_survivors"] + r["partial_survivors"] <= 2, r["survivors"]
    assert r["wrong_kind"] == []
    assert r["ordinary_words_replaced"] <= 28, r["replaced"]
    # the classes of the issue: weekdays, food words, the companion's "Dessert" stay words
    assert not {"tuesdays", "thursdays", "tues", "thurs", "dessert", "tiramisu", "pancakes"} & set(r["replaced"])
