"""Chat messages written in other languages, for the anonymizer (not a pytest file).

`ORDINARY[lang]`: messages with no identifier (nothing in them may be replaced).
`NAMED[lang]`: templates with `{name}` (a person) and sometimes `{place}`; `planted(seed)` fills them
with names of that language's own script from Faker's person lists of the locale (so the names are
drawn, not chosen) and places from `PLACES`.
Written for the development of `consent.languages`; the held-out test is a set by another author.
"""

from __future__ import annotations

import importlib
import random

ORDINARY = {
    "el": ["Σήμερα ο καιρός είναι πολύ ωραίος και πήγαμε για καφέ στην παραλία.",
           "Δεν κοιμήθηκα καλά χθες, είχα πολλή δουλειά.",
           "Μαγείρεψα φακές και έμεινε φαγητό και για αύριο.",
           "Το τρένο άργησε πάλι μισή ώρα, τι να πεις.",
           "Θέλω να ξεκινήσω γυμναστήριο από τη Δευτέρα."],
    "ru": ["Вчера я весь день работал, а вечером смотрел кино.",
           "Сегодня очень холодно, надела два свитера.",
           "Кошка опять разбила чашку на кухне.",
           "Надо купить хлеб, молоко и немного сыра.",
           "Я устала, но проект наконец закончен."],
    "uk": ["Сьогодні я нарешті виспалася.",
           "Ми ходили в парк, і діти годували качок."],
    "ar": ["اليوم كان الجو جميلا وذهبنا إلى السوق.",
           "أنا متعب جدا بعد العمل ولا أريد الطبخ.",
           "اشتريت كتابا جديدا عن تاريخ الطعام.",
           "الأطفال نائمون الآن والبيت هادئ أخيرا."],
    "he": ["היום היה יום ארוך בעבודה ואני עייף מאוד.",
           "קניתי ירקות בשוק והכנתי סלט גדול.",
           "הגשם לא מפסיק כבר שלושה ימים."],
    "hi": ["आज मौसम बहुत अच्छा है, हम बाजार गए।",
           "मुझे कल रात ठीक से नींद नहीं आई।",
           "मैंने आज दाल और चावल बनाए।",
           "ऑफिस में बहुत काम था, अब थक गया हूँ।"],
    "ja": ["今日はとても暑かったので、家で映画を見ました。",
           "朝ごはんにパンとコーヒーを食べました。",
           "電車が遅れて、会議に少し遅刻しました。",
           "週末は雨だったので、ずっと本を読んでいました。"],
    "zh": ["今天天气很好，我们去公园散步了。",
           "我昨天晚上没睡好，今天有点累。",
           "周末我想在家里休息，看看书。",
           "我做了一碗面条，味道还不错。"],
    "ko": ["오늘 날씨가 좋아서 공원에 산책하러 갔어요.",
           "어제 늦게까지 일해서 너무 피곤해요.",
           "주말에는 집에서 영화를 볼 거예요."],
    "th": ["วันนี้อากาศดีมาก เราไปเดินเล่นที่สวน",
           "เมื่อคืนนอนไม่ค่อยหลับเลย"],
    "de": ["Heute war das Wetter schön und wir sind mit dem Fahrrad zum See gefahren.",
           "Ich habe keine Lust mehr auf Regen, der Sommer war viel zu kurz.",
           "Der Kuchen ist im Ofen und die Küche riecht nach Zimt.",
           "Morgen muss ich früh aufstehen, weil der Zug um sechs fährt.",
           "Die Kinder spielen im Garten und der Hund schläft in der Sonne."],
    "es": ["Hoy hace mucho calor y vamos a la playa con los niños.",
           "Estoy cansada, el trabajo de esta semana fue muy duro.",
           "Compré pan, queso y un poco de fruta para la cena.",
           "Mañana tengo que ir al médico temprano."],
    "fr": ["Je suis allé au marché ce matin et j'ai acheté des fraises.",
           "Il pleut depuis trois jours, je ne sors plus.",
           "Le gâteau est presque prêt, la cuisine sent bon."],
    "it": ["Oggi sono andato al mare con mia sorella e abbiamo mangiato un gelato.",
           "Stasera cucino la pasta con le zucchine."],
    "pt": ["Hoje fui ao mercado e comprei frutas para a semana.",
           "Estou com sono, o dia foi muito longo."],
    "nl": ["Ik ben vandaag naar de winkel gegaan en heb brood gekocht."],
}

NAMED = {
    "el": ["Χθες είδα τον {name} στο λιμάνι.", "Η {name} μου έστειλε φωτογραφίες από το ταξίδι."],
    "ru": ["Вчера я встретил {name} в центре, он передаёт привет.", "Позвонила {name}, у неё всё хорошо."],
    "ar": ["اتصل بي {name} اليوم وسأل عنك.", "سأزور {name} يوم الجمعة."],
    "he": ["דיברתי היום עם {name} על העבודה.", "{name} מגיע אלינו בשבת."],
    "hi": ["कल {name} हमारे घर आए थे।", "मैंने {name} को फ़ोन किया।"],
    "ja": ["昨日{name}さんと会いました。", "{name}さんがケーキを持ってきてくれました。"],
    "zh": ["昨天{name}来我家吃饭了。", "我和{name}一起去看电影。"],
    "ko": ["어제 {name} 씨를 만났어요.", "{name}한테 전화했어요."],
    "de": ["Ich habe gestern mit {name} telefoniert, es geht ihr gut.", "Morgen kommt {name} zum Essen vorbei."],
    "es": ["Ayer vi a {name} en el mercado y me contó que se muda.", "Mañana como con {name}."],
    "fr": ["J'ai croisé {name} à la boulangerie ce matin.", "{name} m'a appelé hier soir."],
}

LOCALES = {"el": ["el_GR"], "ru": ["ru_RU"], "ar": ["ar_AA"], "he": ["he_IL"], "hi": ["hi_IN"],
           "ja": ["ja_JP"], "zh": ["zh_CN", "zh_TW"], "ko": ["ko_KR"], "de": ["de_DE"], "es": ["es_ES"],
           "fr": ["fr_FR"]}
# full names where the language writes them whole (no space in Han and Hangul)
FULL = {"ja", "zh", "ko"}


def _names(locale: str, attr: str) -> list[str]:
    p = importlib.import_module(f"faker.providers.person.{locale}").Provider
    v = p.__dict__.get(attr) or getattr(p, attr, None) or []
    return sorted(n for n in v if isinstance(n, str) and " " not in n)


def planted(seed: int = 0, per_template: int = 3) -> list[tuple[str, str, str]]:
    """(language, message, the planted name) for every template, `per_template` draws each."""
    rng = random.Random(seed)
    out = []
    for lang, templates in NAMED.items():
        for t in templates:
            for _ in range(per_template):
                loc = rng.choice(LOCALES[lang])
                first = rng.choice(_names(loc, "first_names"))
                if lang in FULL:
                    name = rng.choice(_names(loc, "last_names")) + first if lang != "ja" else rng.choice(
                        _names(loc, "last_names"))
                else:
                    name = first
                out.append((lang, t.format(name=name), name))
    return out
