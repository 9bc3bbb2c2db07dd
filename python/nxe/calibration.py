"""The sentences `nxe bake` checks a baked text model on (its parity gate), written for this
package: short and long, questions and statements, everyday and technical topics, numbers,
punctuation, accented Latin, Greek, Cyrillic, CJK, Arabic, emoji and code, so that the
comparison covers the lengths and token kinds an embedding model meets. ``sentences()`` adds
longer passages assembled from them, up to several hundred tokens, so that truncation at the
model's length limit is exercised too.
"""

from __future__ import annotations

_WRITTEN = (
    "Hello!",
    "ok",
    "Where is the nearest train station?",
    "The cat slept on the warm windowsill all afternoon.",
    "How do I reset my password if I no longer have access to my email?",
    "Quarterly revenue rose 12.5% to $4.2 billion, beating analysts' forecasts.",
    "A light breeze carried the smell of rain across the empty football pitch.",
    "Photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen.",
    "Can you recommend a good vegetarian restaurant near the old harbour?",
    "The meeting has been moved from Tuesday at 3 pm to Thursday at 10 am.",
    "Please turn off the lights when you leave the laboratory.",
    "My laptop battery drains quickly even when the screen is dimmed.",
    "The museum's new wing displays ceramics from the fourteenth century.",
    "Children learn languages faster when they hear them spoken at home.",
    "Is it safe to eat raw cookie dough?",
    "The bridge was closed for repairs after the winter storms damaged its supports.",
    "She finished the marathon in three hours and forty-two minutes.",
    "Compile the project with optimisations enabled before measuring its speed.",
    "def add(a, b):\n    return a + b",
    "SELECT name, COUNT(*) FROM orders GROUP BY name HAVING COUNT(*) > 3;",
    "Error 404: the page you requested could not be found.",
    "Café au lait, crème brûlée and a croissant, s'il vous plaît.",
    "Die Universität liegt am Ufer des Flusses, nicht weit vom Bahnhof.",
    "El niño comió una manzana mientras esperaba el autobús.",
    "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
    "Москва — столица России и крупнейший город страны.",
    "東京は日本の首都であり、世界最大の都市圏の一つです。",
    "我今天早上喝了一杯绿茶，然后去公园散步。",
    "서울은 한국의 수도입니다.",
    "مرحبا بكم في المكتبة العامة للمدينة.",
    "I love this song 🎶🎉 — it always makes my day 😊",
    "Temperatures will reach 35 °C by noon; drink plenty of water.",
    "The quick brown fox jumps over the lazy dog.",
    "Why is the sky blue during the day but red at sunset?",
    "Gradient descent updates each weight in the direction that lowers the loss.",
    "The tenant must give two months' written notice before moving out.",
    "Add two cups of flour, a pinch of salt and stir until smooth.",
    "In 1969, astronauts walked on the Moon for the first time.",
    "Our flight was delayed by six hours because of a strike at the airport.",
    "The patient reported mild headaches and occasional dizziness after the new medication.",
    "A well-placed comma can change the meaning of a sentence entirely.",
    "Supercalifragilisticexpialidocious is a very long and unusual word.",
    "pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism",
    "WHY ARE YOU SHOUTING IN ALL CAPITAL LETTERS?",
    "e-mail: someone@example.com, phone: +44 20 7946 0000",
    "https://example.org/path/to/page?query=value&lang=en",
    "The river rose overnight, and by morning the lower streets of the village were "
    "flooded up to the doorsteps.",
    "Volunteers planted four hundred trees along the highway to reduce noise and dust.",
    "Neural networks with billions of parameters need careful engineering to run on "
    "ordinary laptops without specialised hardware.",
    "Is there any difference between a crocodile and an alligator?",
    "The orchestra tuned their instruments while the audience found their seats.",
    "Mix the blue and yellow paint to get green.",
    "He whispered, \"Don't look now, but someone is following us.\"",
    "The library lends books, films, board games and even gardening tools.",
)

# Pieces the longer passages are made of: joined in varying orders and counts, they give
# paragraphs from about forty to several hundred tokens.
_PASSAGE_PARTS = (
    "The committee reviewed the proposal in detail and asked for a revised budget.",
    "Several residents raised concerns about traffic and parking near the new school.",
    "Engineers measured the vibration of the structure under different wind speeds.",
    "The results suggest that small changes in temperature have large effects on yield.",
    "After a long debate, the council agreed to fund the project for another year.",
    "Data from the sensors were collected every minute and stored for later analysis.",
    "Critics praised the novel for its vivid characters but found the ending abrupt.",
    "Users can export their reports as spreadsheets or share them through a link.",
)


def sentences() -> list[str]:
    """The calibration sentences: the written ones, then sixteen passages of increasing
    length assembled from the parts above (the same list on every call)."""
    passages = []
    count = len(_PASSAGE_PARTS)
    for i in range(16):
        pieces = [_PASSAGE_PARTS[(i * 3 + j) % count] for j in range(2 + 2 * i)]
        passages.append(" ".join(pieces))
    return list(_WRITTEN) + passages


def read_sentences(path: str) -> list[str]:
    """Sentences from a text file, one a line (UTF-8; blank lines are skipped)."""
    with open(path, encoding="utf-8") as file:
        lines = [line.rstrip("\r\n") for line in file]
    return [line for line in lines if line.strip()]


# Standard-library modules whose docstrings docstring_sentences reads.
_DOC_MODULES = ("argparse", "asyncio", "collections", "csv", "datetime", "decimal", "email",
                "functools", "http.client", "inspect", "json", "logging", "os", "pathlib",
                "pickle", "random", "re", "shutil", "socket", "sqlite3", "statistics", "string",
                "subprocess", "tarfile", "textwrap", "threading", "typing", "unittest", "urllib",
                "zipfile")


def docstring_sentences(count: int, seed: int = 0) -> list[str]:
    """``count`` real English sentences of mixed length (3 to 120 words): the docstrings of
    Python's standard library split into sentences, distinct, shuffled with ``seed``. The same
    Python gives the same list; for benchmarks and tests that need many varied texts."""
    import importlib
    import inspect
    import re
    import warnings

    import numpy as np

    found: list[str] = []
    seen: set[str] = set()
    for name in _DOC_MODULES:
        module = importlib.import_module(name)
        docs = [module.__doc__ or ""]
        with warnings.catch_warnings():  # deprecated aliases (typing.re) warn when read
            warnings.simplefilter("ignore", DeprecationWarning)
            for _, member in sorted(vars(module).items()):
                if inspect.isfunction(member) or inspect.isclass(member):
                    docs.append(inspect.getdoc(member) or "")
        for doc in docs:
            flat = re.sub(r"\s+", " ", doc).strip()
            for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])", flat):
                if 3 <= len(sentence.split()) <= 120 and sentence not in seen:
                    seen.add(sentence)
                    found.append(sentence)
    if len(found) < count:
        raise ValueError(f"only {len(found)} sentences found, {count} asked for")
    order = np.random.default_rng(seed).permutation(len(found))
    return [found[i] for i in order[:count]]


__all__ = ["docstring_sentences", "read_sentences", "sentences"]
