"""Seeded generators of identifiers embedded in chat messages (not a pytest file).

The recognizers are measured on the class, not on a few examples: every generator here makes an
identifier of one form (national numbers with their real check digits, bank accounts, cue word +
record number, names in many scripts, nicknames, lowercase surnames ...) and `messages(n, seed)`
embeds them in varied sentences, so a fix tuned to one wording shows up as survivors on the
others. `ordinary(n, seed)` makes the hard negatives: messages with no identifier that are full of
what recognizers mistake for one (weekdays in the plural, capitalized food words, brands, works of
fiction, numbers of every ordinary kind).

The name lists are written here, independently of the recognizers' gazetteers; the check-digit
algorithms are the published ones (CPF mod 11, Aadhaar Verhoeff, INSEE 97 - n mod 97, codice
fiscale odd/even table, IBAN ISO 7064 mod 97-10, PESEL weights, BSN 11-test, Luhn, NHS mod 11,
Chinese resident ID ISO 7064 mod 11-2, Turkish TC Kimlik).

    python tests/identifier_generators.py [N] [SEED]     # prints N generated messages as JSONL
"""

from __future__ import annotations

import json
import random
import string
import sys

# --- check digits -------------------------------------------------------------------------------


def luhn_digit(body: str) -> str:
    total = 0
    for i, c in enumerate(reversed(body)):
        d = int(c)
        if i % 2 == 0:
            d *= 2
            d -= 9 if d > 9 else 0
        total += d
    return str((10 - total % 10) % 10)


_V_D = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5], [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
        [3, 4, 0, 1, 2, 8, 9, 5, 6, 7], [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
        [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3], [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
        [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]]
_V_P = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4], [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
        [8, 9, 1, 6, 0, 4, 3, 5, 2, 7], [9, 4, 5, 3, 1, 2, 6, 8, 7, 0], [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
        [2, 7, 9, 3, 8, 0, 6, 4, 1, 5], [7, 0, 4, 6, 9, 1, 3, 2, 5, 8]]
_V_INV = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9]


def verhoeff_digit(body: str) -> str:
    c = 0
    for i, ch in enumerate(reversed(body)):
        c = _V_D[c][_V_P[(i + 1) % 8][int(ch)]]
    return str(_V_INV[c])


def iban_check(country: str, bban: str) -> str:
    n = int("".join(str(int(ch, 36)) for ch in bban + country + "00"))
    return f"{98 - n % 97:02d}"


# --- identifier forms: each fn(rng) -> (text as written, kind) ----------------------------------


def _digits(rng, n, first="0123456789"):
    return rng.choice(first) + "".join(rng.choice(string.digits) for _ in range(n - 1))


def cpf(rng):
    body = [int(c) for c in _digits(rng, 9)]
    for weight_from in (10, 11):
        s = sum(d * w for d, w in zip(body, range(weight_from, 1, -1)))
        body.append(0 if s % 11 < 2 else 11 - s % 11)
    d = "".join(map(str, body))
    return (rng.choice([f"{d[:3]}.{d[3:6]}.{d[6:9]}-{d[9:]}", d, f"{d[:9]}-{d[9:]}"]), "BR_CPF")


def aadhaar(rng):
    body = _digits(rng, 11, "23456789")
    d = body + verhoeff_digit(body)
    return (rng.choice([f"{d[:4]} {d[4:8]} {d[8:]}", d, f"{d[:4]}-{d[4:8]}-{d[8:]}"]), "IN_AADHAAR")


def insee(rng):
    sex, yy, mm = rng.choice("12"), f"{rng.randint(40, 99):02d}", f"{rng.randint(1, 12):02d}"
    dept, commune, order = f"{rng.randint(1, 95):02d}", f"{rng.randint(1, 990):03d}", f"{rng.randint(1, 999):03d}"
    n = sex + yy + mm + dept + commune + order
    key = f"{97 - int(n) % 97:02d}"
    return (rng.choice([f"{sex} {yy} {mm} {dept} {commune} {order} {key}", n + key, f"{n} {key}"]), "FR_INSEE")


_CF_ODD = dict(zip(string.digits + string.ascii_uppercase,
                   [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8,
                    12, 14, 16, 10, 22, 25, 24, 23]))


def codice_fiscale(rng):
    letters = "".join(rng.choice("BCDFGHLMNPRSTVZ") for _ in range(6))
    yy, month = f"{rng.randint(50, 99):02d}", rng.choice("ABCDEHLMPRST")
    day = rng.randint(1, 28) + rng.choice([0, 40])
    place = rng.choice("ABCDEFGHILM") + f"{rng.randint(1, 999):03d}"
    body = f"{letters}{yy}{month}{day:02d}{place}"
    total = 0
    for i, ch in enumerate(body):
        if i % 2 == 0:
            total += _CF_ODD[ch]
        else:
            total += int(ch) if ch.isdigit() else ord(ch) - 65
    code = body + chr(65 + total % 26)
    return (code if rng.random() < 0.8 else code.lower(), "IT_FISCAL")


_IBAN_BBAN = {"DE": "n18", "FR": "n10a11n2", "GB": "a4n14", "IT": "a1n10c12", "ES": "n20", "NL": "a4n10",
              "BE": "n12", "PT": "n21", "PL": "n24", "IE": "a4n14", "AT": "n16", "CH": "n17"}


def _bban(rng, spec):
    out, i = "", 0
    while i < len(spec):
        kind = spec[i]
        j = i + 1
        while j < len(spec) and spec[j].isdigit():
            j += 1
        n = int(spec[i + 1:j])
        pool = {"n": string.digits, "a": string.ascii_uppercase, "c": string.digits * 3 + string.ascii_uppercase}[kind]
        if kind == "a" and spec == "n10a11n2":  # French account numbers are alphanumeric but mostly digits
            pool = string.digits
        out += "".join(rng.choice(pool) for _ in range(n))
        i = j
    return out


def iban(rng):
    country = rng.choice(sorted(_IBAN_BBAN))
    bban = _bban(rng, _IBAN_BBAN[country])
    code = country + iban_check(country, bban) + bban
    if rng.random() < 0.6:
        code = " ".join(code[i:i + 4] for i in range(0, len(code), 4))
    return (code, "IBAN")


def pesel(rng):
    body = f"{rng.randint(50, 99):02d}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{_digits(rng, 4)}"
    s = sum(int(d) * w for d, w in zip(body, [1, 3, 7, 9, 1, 3, 7, 9, 1, 3]))
    return (body + str((10 - s % 10) % 10), "PL_PESEL")


def bsn(rng):
    while True:
        body = _digits(rng, 8, "123456789")
        s = sum(int(d) * w for d, w in zip(body, range(9, 1, -1)))
        if s % 11 < 10:
            d = body + str(s % 11)
            return (rng.choice([d, f"{d[:4]}.{d[4:6]}.{d[6:]}"]), "NL_BSN")


def personnummer(rng):
    yymmdd = f"{rng.randint(50, 99):02d}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
    body = yymmdd + _digits(rng, 3)
    return (f"{yymmdd}-{body[6:]}{luhn_digit(body)}", "SE_PERSONNUMMER")


def sin(rng):
    body = _digits(rng, 8, "1234567")
    d = body + luhn_digit(body)
    return (rng.choice([f"{d[:3]} {d[3:6]} {d[6:]}", f"{d[:3]}-{d[3:6]}-{d[6:]}"]), "CA_SIN")


def nhs(rng):
    while True:
        body = _digits(rng, 9, "4689")
        s = sum(int(d) * w for d, w in zip(body, range(10, 1, -1)))
        check = 11 - s % 11
        if check == 11:
            check = 0
        if check != 10:
            d = body + str(check)
            return (rng.choice([f"{d[:3]} {d[3:6]} {d[6:]}", d]), "UK_NHS")


def cn_resident(rng):
    body = f"{rng.randint(110000, 659000)}{rng.randint(1950, 2005)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}" \
           f"{_digits(rng, 3)}"
    s = sum(int(d) * (2 ** (17 - i) % 11) for i, d in enumerate(body))
    return (body + "10X98765432"[s % 11], "CN_RESIDENT")


def tc_kimlik(rng):
    d = [int(c) for c in _digits(rng, 9, "123456789")]
    d10 = ((d[0] + d[2] + d[4] + d[6] + d[8]) * 7 - (d[1] + d[3] + d[5] + d[7])) % 10
    d11 = (sum(d) + d10) % 10
    return ("".join(map(str, d + [d10, d11])), "TR_KIMLIK")


def za_id(rng):
    body = f"{rng.randint(50, 99):02d}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{_digits(rng, 4)}0{rng.randint(8, 9)}"
    return (body + luhn_digit(body), "ZA_ID")


def us_ssn(rng):
    return (f"{rng.randint(100, 665):03d}-{rng.randint(10, 99):02d}-{rng.randint(1000, 9999):04d}", "US_SSN")


def card(rng):
    prefix = rng.choice(["4", "51", "52", "53", "54", "55"])
    body = prefix + _digits(rng, 15 - len(prefix))
    d = body + luhn_digit(body)
    return (rng.choice([" ".join(d[i:i + 4] for i in range(0, 16, 4)), d, "-".join(d[i:i + 4] for i in range(0, 16, 4))]),
            "CARD")


# cue word + record number: the class ("MRN 00482917", "patient ID 7731-22") for any cue
RECORD_CUES = ["MRN", "medical record number", "patient ID", "patient number", "hospital number", "chart number",
               "member ID", "membership number", "policy number", "insurance number", "claim number",
               "student ID", "student number", "employee ID", "staff number", "badge number", "case number",
               "file reference", "reference number", "account number", "customer number", "passport number",
               "passport no.", "licence number", "driver's license number", "tax ID", "TIN", "voter ID",
               "ID number", "ID no", "personnummer", "ticket number", "booking reference", "tracking number",
               "prescription number", "registration number", "library card number", "PIN"]


def record_number(rng):
    shape = rng.randrange(6)
    if shape == 0:
        tok = _digits(rng, rng.randint(6, 10))
    elif shape == 1:
        tok = "".join(rng.choice(string.ascii_uppercase) for _ in range(rng.randint(1, 3))) + _digits(rng, rng.randint(5, 8))
    elif shape == 2:
        tok = f"{_digits(rng, rng.randint(3, 4))}-{_digits(rng, rng.randint(3, 5))}"
    elif shape == 3:
        tok = "".join(rng.choice(string.ascii_uppercase) for _ in range(2)) + "-" + _digits(rng, rng.randint(4, 7))
    elif shape == 4:
        tok = "0" * rng.randint(1, 3) + _digits(rng, rng.randint(4, 6), "123456789")
    else:
        tok = _digits(rng, 3) + " " + _digits(rng, 3) + " " + _digits(rng, 3)
    return (tok, "RECORD")


# Names written in their own scripts (given and family names, several cultures).
SCRIPT_NAMES = [
    "राहुल", "अनीता", "प्रिया शर्मा", "विकास गुप्ता", "सुनीता देवी",        # Devanagari
    "محمد", "فاطمة الزهراء", "يوسف", "ليلى حداد", "عمر خالد",                # Arabic
    "שירה", "יונתן כהן", "נועה", "אברהם לוי",                               # Hebrew
    "Дмитрий", "Наталья Смирнова", "Олег", "Ирина Петрова",                 # Cyrillic
    "Ελένη", "Νίκος Παππάς", "Κατερίνα",                                    # Greek
    "李伟", "王芳", "张丽娜", "陈静",                                         # Han
    "さくら", "佐藤健", "ゆうき",                                               # Japanese
    "김민준", "이서연", "박지훈",                                               # Hangul
    "สมชาย", "มาลี",                                                       # Thai
    "সুমন", "রবীন্দ্র",                                                     # Bengali
    "முருகன்", "லட்சுமி",                                                   # Tamil
    "ნინო", "გიორგი",                                                       # Georgian
    "Արամ", "Անի",                                                         # Armenian
    "አበበ", "ትዕግስት",                                                       # Ethiopic
    "ਹਰਪ੍ਰੀਤ", "ગીતા", "ಅನಿಲ್", "రమేష్", "മീര",                              # Gurmukhi, Gujarati, Kannada, Telugu, Malayalam
]
NICK_PREFIX = ["Big", "Lil", "Little", "Fat", "Skinny", "Tiny", "Old", "Young", "Crazy", "Baby", "Sweet", "Uncle",
               "Auntie", "Doc", "Coach", "Papa", "Mama", "Cousin", "Brother", "Sister"]
NICK_CORE = ["Mo", "Dre", "Kev", "Jay", "Tee", "Bo", "Ray", "Sal", "Dee", "Lou", "Rocco", "Jojo", "Gigi", "Nando",
             "Tito", "Pip", "Ziggy", "Bash", "Deo", "Kiki", "Nnamdi", "Tayo", "Bubba", "Kofi", "Wen", "Ike"]
NICK_WORDS = ["Sparky", "Bean", "Shorty", "Smudge", "Biscuit", "Tank", "Noodle", "Moose", "Pickles", "Ace"]
SURNAMES = ["okonkwo", "wiśniewska", "haddad", "kowalczyk", "nakamura", "fernández", "oyelaran", "brandstätter",
            "papadakis", "van der berg", "mbeki", "castellanos", "horvath", "lindqvist", "nguyen", "abernathy",
            "quispe", "oyelowo", "dąbrowski", "sæther", "ibrahimović", "tanaka", "chaudhry", "mwangi", "zielińska",
            "achterberg", "kuznetsov", "delacroix", "oduya", "halvorsen"]
GIVEN = ["ana", "tomás", "keiko", "ifeoma", "dariusz", "mehmet", "signe", "rafael", "yusuf", "malia", "oskar",
         "priyanka", "bogdan", "aroha", "thandiwe", "lucía", "jens", "farida", "kwabena", "ngozi"]
TITLES = ["mr", "mrs", "ms", "dr", "prof", "mx", "Mr", "Mrs", "Ms", "Dr"]
RELATIONS = ["sister", "brother", "friend", "cousin", "boss", "neighbour", "colleague", "landlord", "aunt", "uncle",
             "therapist", "coach", "ex", "roommate", "nephew", "niece"]


def script_name(rng):
    return (rng.choice(SCRIPT_NAMES), "PERSON")


def nickname(rng):
    if rng.random() < 0.7:
        return (f"{rng.choice(NICK_PREFIX)} {rng.choice(NICK_CORE)}", "PERSON")
    return (rng.choice(NICK_WORDS), "NICKNAME")


def lowercase_surname(rng):
    shape = rng.randrange(3)
    if shape == 0:
        return (f"{rng.choice(TITLES)} {rng.choice(SURNAMES)}", "PERSON")
    if shape == 1:
        return (f"{rng.choice(GIVEN)} {rng.choice(SURNAMES)}", "PERSON")
    return (rng.choice(SURNAMES), "PERSON")


FORMS = {"BR_CPF": cpf, "IN_AADHAAR": aadhaar, "FR_INSEE": insee, "IT_FISCAL": codice_fiscale, "IBAN": iban,
         "PL_PESEL": pesel, "NL_BSN": bsn, "SE_PERSONNUMMER": personnummer, "CA_SIN": sin, "UK_NHS": nhs,
         "CN_RESIDENT": cn_resident, "TR_KIMLIK": tc_kimlik, "ZA_ID": za_id, "US_SSN": us_ssn, "CARD": card,
         "RECORD": record_number, "SCRIPT_NAME": script_name, "NICKNAME": nickname,
         "LOWERCASE_SURNAME": lowercase_surname}
# how a person would say which number it is (none of them is needed: numbers come bare too)
NUMBER_CUES = {"BR_CPF": ["CPF", "cpf", "CPF number"], "IN_AADHAAR": ["Aadhaar", "aadhaar no", "UID"],
               "FR_INSEE": ["numéro de sécu", "INSEE number", "social security number", "carte vitale number"],
               "IT_FISCAL": ["codice fiscale", "tax code", "CF"], "IBAN": ["IBAN", "bank account", "account"],
               "PL_PESEL": ["PESEL", "pesel number"], "NL_BSN": ["BSN", "burgerservicenummer"],
               "SE_PERSONNUMMER": ["personnummer", "personal number"], "CA_SIN": ["SIN", "social insurance number"],
               "UK_NHS": ["NHS number", "nhs no"], "CN_RESIDENT": ["ID card number", "身份证号", "resident ID"],
               "TR_KIMLIK": ["TC kimlik no", "kimlik number"], "ZA_ID": ["ID number", "SA ID"],
               "US_SSN": ["SSN", "social"], "CARD": ["card number", "visa", "credit card"]}

NUMBER_FRAMES = [
    "my {cue} is {x}, can you keep it somewhere safe",
    "the bank asked for my {cue} again: {x}",
    "{cue} {x} (writing it here so I stop losing it)",
    "ugh, typed my {cue} wrong on the form, it's {x} not the other one",
    "ok so {x} is the number they want",
    "for the visa they needed {x}, which is my {cue}",
    "remember {x}? that's the {cue} for mum's account",
    "{x} - don't ask",
    "they read out {x} over the phone and I panicked",
    "copying it from the letter: {cue}: {x}.",
    "is {x} a valid {cue}? the site keeps refusing it",
    "my {cue} ends the same as yours lol, {x}",
]
RECORD_FRAMES = [
    "the nurse wrote {cue} {x} on my wristband",
    "my {cue} is {x} if the clinic calls",
    "{cue}: {x}",
    "they kept asking for the {cue}, it's {x}",
    "found it! {cue} {x}, in the drawer the whole time",
    "can you remember {cue} {x} for me? I always forget it",
    "new {cue} just came through ({x})",
    "the letter says {cue} #{x} at the top",
    "when I call I have to give {cue} {x} and my date of birth",
    "{x} is my {cue}, weird that it starts like that",
]
PERSON_FRAMES = [
    "had lunch with {x} today, it was nice",
    "{x} keeps texting me about the trip",
    "my {rel} {x} is coming over on the weekend",
    "I think {x} is upset with me",
    "ran into {x} at the market this morning",
    "going to the cinema with {x} later",
    "{x} said the meeting moved again",
    "honestly {x} is the only one who gets it",
    "can't believe {x} forgot my birthday",
    "we all went to {x}'s place after work",
    "talked to {x} for ages last night",
    "{x} and I are doing the course together",
]


def _fill(rng, frame: str, x: str, cue: str = "") -> str:
    return frame.format(x=x, cue=cue, rel=rng.choice(RELATIONS))


def messages(n: int = 400, seed: int = 0) -> list[dict]:
    """n generated messages: {"text", "identifiers": [[text, form]], "form"}; every form in turn."""
    rng = random.Random(f"identifiers:{seed}")
    forms = sorted(FORMS)
    out = []
    for i in range(n):
        form = forms[i % len(forms)]
        x, kind = FORMS[form](rng)
        if form in NUMBER_CUES:
            cue = rng.choice(NUMBER_CUES[form])
            frame = rng.choice(NUMBER_FRAMES)
        elif form == "RECORD":
            cue = rng.choice(RECORD_CUES)
            frame = rng.choice(RECORD_FRAMES)
        else:
            cue, frame = "", rng.choice(PERSON_FRAMES)
            if kind == "NICKNAME":  # a nickname word needs its telling: "we call him Tank"
                frame = rng.choice(["everyone calls my {rel} " + "{x}" + ", even his boss",
                                    "we call her {x} since school, she hates it",
                                    "my {rel}, aka {x}, is in town", "{x} (that's what we call my {rel}) got engaged"])
        text = _fill(rng, frame, x, cue)
        if rng.random() < 0.25:
            text = text[0].upper() + text[1:]
        out.append({"text": text, "identifiers": [[x, form]], "form": form})
    return out


# --- hard negatives -----------------------------------------------------------------------------

WEEKDAYS = ["Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays", "Sundays", "Tues", "Thurs",
            "Weds", "Mon", "Fri", "Sat", "Sun", "weekends", "Tuesday's", "Friday's"]
FOOD = ["Dessert", "Pancakes", "Lasagne", "Brunch", "Sushi", "Risotto", "Tiramisu", "Pudding", "Toast", "Curry",
        "Dumplings", "Porridge", "Paella", "Falafel", "Cheesecake", "Ramen", "Hummus", "Goulash", "Gnocchi"]
STORES = ["Lidl", "Aldi", "Tesco", "Ikea", "Carrefour", "Costco", "Sainsbury's", "Waitrose", "Mercadona"]
BRANDS = ["Netflix", "Spotify", "Ikea", "Lidl", "Aldi", "Tesco", "Zara", "Uniqlo", "Nintendo", "PlayStation",
          "Xbox", "Starbucks", "Duolingo", "WhatsApp", "Instagram", "TikTok", "YouTube", "Deliveroo", "Uber",
          "Fitbit", "Kindle", "Peloton", "Zoom", "Lego", "Nutella", "Airbnb", "Strava", "Headspace"]
FICTION = ["Stranger Things", "The Great British Bake Off", "Gandalf", "Hermione", "Frodo", "Sherlock", "Pikachu",
           "Shrek", "Yoda", "Mario Kart", "Zelda", "Bridgerton", "The Simpsons", "Ted Lasso", "Moomins", "Paddington",
           "Winnie the Pooh", "Dune", "Minecraft", "Animal Crossing", "Pokémon", "Succession"]
HOLIDAYS = ["Christmas", "Easter", "Diwali", "Ramadan", "Eid", "Hanukkah", "Thanksgiving", "Halloween",
            "New Year's Eve", "Black Friday", "Lunar New Year", "Boxing Day"]
NEGATIVE_FRAMES = [
    "on {w} I go to yoga, it's the only thing keeping me sane",
    "{w} are always the worst, no idea why",
    "I do the big shop on {w} at {s}",
    "{f} was the best part of the evening",
    "{f} again for dinner, no regrets",
    "we made {f} from scratch and it took three hours",
    "binged {t} on {b} all weekend",
    "the kids are obsessed with {t} right now",
    "finally finished {t}, the ending was weird",
    "{b} keeps sending me notifications",
    "my {b} streak is at 200 days",
    "got a {b} gift card for my birthday",
    "{h} is going to be chaotic this year",
    "we're doing {h} at my place for once",
    "I walked {n1} steps today and my feet hurt",
    "paid {n2} euros for the flight, which is ridiculous",
    "the meeting is at {n3} in room {n4}",
    "I'm {n5} and still can't cook rice",
    "the score was {n6}, terrible match",
    "{n7}% battery and no charger",
    "update {n8} broke the app again",
    "chapter {n4} of the book is where it gets good",
    "we're in flat {n4} on the third floor... no wait, that was the old one",
    "it was {n9} degrees at noon, way too hot",
    "the train at {n3} was cancelled again",
    "I've read {n5} books this year so far",
    "baked {n5} cookies and ate half",
    "on {w} and {w2} I pick the kids up at {n3}",
]


def ordinary(n: int = 200, seed: int = 0) -> list[str]:
    """n messages with no identifier in them (every changed word is a false replacement)."""
    rng = random.Random(f"ordinary:{seed}")
    out = []
    for i in range(n):
        frame = NEGATIVE_FRAMES[i % len(NEGATIVE_FRAMES)]
        text = frame.format(
            w=rng.choice(WEEKDAYS), s=rng.choice(STORES), w2=rng.choice(WEEKDAYS), f=rng.choice(FOOD), b=rng.choice(BRANDS),
            t=rng.choice(FICTION), h=rng.choice(HOLIDAYS), n1=f"{rng.randint(3, 25)},{rng.randint(100, 999)}",
            n2=rng.randint(40, 900), n3=f"{rng.randint(7, 21)}:{rng.choice(['00', '15', '30', '45'])}",
            n4=rng.randint(2, 40), n5=rng.randint(12, 70), n6=f"{rng.randint(0, 5)}-{rng.randint(0, 5)}",
            n7=rng.randint(1, 15), n8=f"{rng.randint(1, 17)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}",
            n9=rng.randint(28, 41))
        if rng.random() < 0.3:
            text = text[0].upper() + text[1:]
        out.append(text)
    return out


def check_digits_hold(text: str, form: str) -> bool:
    """Recompute the check of a generated number (used by the generators' own test)."""
    d = "".join(c for c in text if c.isalnum()).upper()
    if form == "BR_CPF":
        body = [int(c) for c in d[:9]]
        for w in (10, 11):
            s = sum(x * y for x, y in zip(body, range(w, 1, -1)))
            body.append(0 if s % 11 < 2 else 11 - s % 11)
        return "".join(map(str, body)) == d
    if form == "IN_AADHAAR":
        return verhoeff_digit(d[:-1]) == d[-1]
    if form == "FR_INSEE":
        return 97 - int(d[:13]) % 97 == int(d[13:])
    if form == "IBAN":
        return int("".join(str(int(ch, 36)) for ch in d[4:] + d[:4])) % 97 == 1
    if form in ("CARD", "CA_SIN", "ZA_ID"):
        return luhn_digit(d[:-1]) == d[-1]
    if form == "SE_PERSONNUMMER":
        return luhn_digit(d[:-1]) == d[-1]
    return True


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    for m in messages(n, seed):
        print(json.dumps(m, ensure_ascii=False))
