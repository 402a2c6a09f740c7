"""The served app through its HTTP API (Gradio's), on loopback, with the echo model."""


import pytest
from gradio_client import Client

from consent import records as consent
from companion import auth


@pytest.fixture
def served(serve_app):
    url, store = serve_app(researcher_password="open sesame")
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"))
    return url, store


def test_researcher_page_is_refused_without_its_password(served):
    url, store = served
    c = Client(url, verbose=False)
    with pytest.raises(Exception, match="needs its password"):
        c.predict("", "", "", api_name="/r_rows")
    msg, _ = c.predict("guess", api_name="/r_login")
    assert msg == "wrong researcher password"
    with pytest.raises(Exception, match="needs its password"):
        c.predict(1, api_name="/r_one")
    # a participant chats; the researcher, once in, sees that turn
    p = Client(url, verbose=False)
    p.predict("ana", "ana-pass", api_name="/sign_in")
    chat = p.predict("my sister lives in Porto", "personal", [], api_name="/respond")[0]
    assert chat[-2]["content"][0]["text"] == "You said: my sister lives in Porto"
    msg, _ = c.predict("open sesame", api_name="/r_login")
    assert msg == "Researcher page open."
    rows = c.predict("ana", "", "", api_name="/r_rows")
    assert [r[1:3] for r in rows["data"]] == [["ana", "day1-1"]]


def test_participant_downloads_their_data_and_withdraws(served):
    import json

    url, store = served
    p = Client(url, verbose=False)
    p.predict("ana", "ana-pass", api_name="/sign_in")
    p.predict("my sister lives in Porto", "personal", [], api_name="/respond")
    got = p.predict(api_name="/my_data")
    path = got["value"] if isinstance(got, dict) else got  # a visibility update carries the file as value
    data = json.loads(open(path, encoding="utf-8").read())
    assert "my sister lives in Porto" in json.dumps(data)
    out = p.predict(False, api_name="/withdraw")
    assert "erase everything" in out[-1]
    assert store.conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 2
    out = p.predict(True, api_name="/withdraw")
    told = [x for x in out if isinstance(x, str) and "erased" in x.lower()]
    assert told and "message" in told[0]  # the participant is told what was erased, in counts
    assert store.conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 0
    with pytest.raises(Exception, match="Sign in first"):
        p.predict(api_name="/my_data")
