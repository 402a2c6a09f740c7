"""A configured model drafts annotation stages through `companion annotate draft`; nothing counts
until a person confirms. The drafter is a scripted backend installed like any model."""

import json
import re

import pytest
from click.testing import CliRunner

from companion.backends.base import TextBackend
from companion.cli import main
from consent import annotate as A
from tests.conftest import export_garden_chat

LINES = ["my garden has tomatoes now", "work was long", "I cooked pasta", "the train was late",
         "what grows in my garden again?", "reading a novel"]


class Drafter(TextBackend):
    """Answers stage A with locus episode and stage B with the history line sharing the most words
    with the probe (as a careful model would); it sees only the prompt."""

    def generate(self, model, messages, params):
        prompt = str(messages[-1]["content"])
        stage = re.search(r"^Stage ([A-E]):", prompt, re.M).group(1)
        if stage == "A":
            yield json.dumps({"locus": "episode", "note": "asks about something said before"})
            return
        probe = set(re.search(r"^Probe \S+: (.*)$", prompt, re.M).group(1).lower().split())
        history = prompt.split("History:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        best = max(history, key=lambda h: len(probe & set(h.split(": ", 1)[1].lower().split())))
        d = best.split()[0]
        yield "Here you go:\n" + json.dumps({"episode_refs": [d], "profile_refs": [], "grounding_dayids": [d],
                                             "referent_on_screen": "no", "note": f"{d} says it"})


@pytest.fixture
def release(store, tmp_path, install_plugin):
    install_plugin("drafter-models", {"companion.models": {"drafter": "tests.test_annotate_draft:Drafter"}})
    rel = tmp_path / "release"
    export_garden_chat(store, rel, LINES)  # every message is a probe
    return rel


def cli(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def test_a_model_drafts_and_a_person_confirms(release):
    key = "U01/day1-9"  # "what grows in my garden again?"
    r = cli("annotate", "draft", str(release), key, "A", "--annotator", "rita", "--model", "drafter/v1")
    assert r.exit_code == 0, r.output
    assert "draft stored, not confirmed" in r.output
    r = cli("annotate", "draft", str(release), key, "B", "--annotator", "rita", "--model", "drafter/v1")
    assert r.exit_code == 2 and "A, not yet confirmed" in r.output  # a draft is no ground to build on
    assert cli("annotate", "confirm", str(release), key, "A", "--annotator", "rita").exit_code == 0
    r = cli("annotate", "draft", str(release), key, "B", "--annotator", "rita", "--model", "drafter/v1")
    assert r.exit_code == 0, r.output
    listed = json.loads(cli("annotate", "list", str(release), "--annotator", "rita", "--json").output)
    assert next(x for x in listed if x["key"] == key)["stages"] == {"A": "confirmed", "B": "draft"}
    st = A.state(release, "rita")[key]["B"]
    assert st["grounding_dayids"] == ["day1-1"] and st["drafted_by"] == "drafter/v1" and st["by"] is None
    r = cli("annotate", "confirm", str(release), key, "B", "--annotator", "rita", "--note", "checked day1-1")
    assert r.exit_code == 0
    st = A.state(release, "rita")[key]["B"]
    assert st["confirmed"] and st["by"] == "rita" and st["drafted_by"] == "drafter/v1" and st["note"] == "checked day1-1"


def test_the_embedded_demo_model_may_not_draft(release):
    r = cli("annotate", "draft", str(release), "U01/day1-9", "A", "--annotator", "rita",
            "--model", "local/smollm2-135m")
    assert r.exit_code == 2 and "cannot draft" in r.output
    assert A.state(release, "rita") == {}


def test_bad_input_is_named_and_nothing_is_stored(release):
    r = cli("annotate", "set", str(release), "U01/day1-9", "A", "--annotator", "rita", input="{locus: episode")
    assert r.exit_code == 2 and "not JSON" in r.output
    r = cli("annotate", "set", str(release), "U01/day1-9", "A", "--annotator", "rita",
            input=json.dumps({"locus": "somewhere", "note": "x"}))
    assert r.exit_code == 2 and "field 'locus'" in r.output
    r = cli("annotate", "set", str(release), "U01/day9-9", "A", "--annotator", "rita",
            input=json.dumps({"locus": "none", "note": "x"}))
    assert r.exit_code == 2 and "no probe 'U01/day9-9'" in r.output
    r = cli("annotate", "set", str(release), "U01/day1-9", "A", "--annotator", "../evil",
            input=json.dumps({"locus": "none", "note": "x"}))
    assert r.exit_code == 2 and "annotator name" in r.output
    assert not (release / "annotations").exists() or not any((release / "annotations").iterdir())
