"""Synthetic long-term memories for ``bench/memories.py``: realistic shapes, known vocabulary.

Owns what the benchmark stores and asks: a thousand users' preferences, profile facts, named
people and pets, events and lessons built from a few hundred words, paraphrased queries, and a
dense stand-in embedder for a model's vectors. Deterministic for a seed; touches no database.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pgvector import Vector

from app.memories.embedding import Embedder
from app.memories.hashing import HashingEmbedder, embed_text
from app.memories.text import content_words

USERS = 1_000


def _words(listing: str) -> list[str]:
    return listing.split()


def _phrases(listing: str) -> list[str]:
    return listing.split("|")


CITIES = _words(
    """
    Lisbon Porto Berlin Munich Paris Lyon Madrid Seville Rome Milan Vienna Prague Oslo
    Bergen Dublin Cork Austin Denver Seattle Boston Toronto Montreal Sydney Perth Tokyo
    Osaka Seoul Busan Nairobi Lagos Cairo Tunis Lima Quito Bogota Santiago Helsinki
    Tallinn Riga Krakow
    """
)
NAMES = _words(
    """
    Ana Ben Carla Dev Elena Farid Greta Hugo Ines Jonas Kira Liam Mina Noah Olga Pavel
    Quinn Rosa Sami Tara Umar Vera Wim Xena Yusuf Zoe Amir Bea Cyrus Dana Emil Freya Gil
    Hana Ivo Jana Kofi Lena Milo Nia
    """
)
RELATIONS = _words(
    """
    sister brother mother father wife husband partner friend colleague boss mentor
    neighbour cousin son daughter
    """
)
PETS = _words(
    """
    dog cat rabbit parrot hamster horse turtle
    """
)
ACTIVITIES = _words(
    """
    hiking swimming painting pottery cycling running climbing baking gardening knitting
    chess surfing skiing fishing photography yoga dancing singing reading writing
    woodworking camping sailing rowing boxing tennis golf birdwatching cooking jogging
    skating
    """
)
FOODS = _words(
    """
    sushi ramen pizza tacos curry paella falafel dumplings risotto pho burritos lasagna
    oysters kimchi hummus croissants sardines goulash borscht ceviche
    """
)
GENRES = _words(
    """
    jazz blues techno folk opera metal reggae punk soul funk classical country hiphop
    ambient
    """
)
THINGS = _words(
    """
    color book movie song season dish drink band sport city
    """
)
VALUES = _words(
    """
    teal crimson Dune Alien Hallelujah autumn paella espresso Radiohead tennis Kyoto
    olive navy Solaris Heat Yesterday spring ramen matcha Queen rugby Porto
    """
)
JOBS = _words(
    """
    nurse teacher engineer designer pharmacist accountant carpenter chef librarian pilot
    electrician architect translator dentist plumber barista
    """
)
PLACES = _phrases(
    "a pottery class|a jazz concert|the farmers market|a wine tasting|a coding workshop|"
    "the science museum|a pride parade|a book club|the climbing gym|a film festival|"
    "a charity run|the botanical garden"
)
TIMES = _phrases(
    "yesterday|last week|last Friday|two days ago|last month|over the weekend|last summer|"
    "three weeks ago"
)
ERRORS = _phrases(
    "the flaky login test|the timezone bug|the memory leak|the broken deploy|"
    "the slow query|the failing migration"
)
FIXES = _phrases(
    "pinning the dependency|adding an index|retrying the request|setting the locale|"
    "closing the connection pool|clearing the cache"
)


ADJECTIVES = _words(
    """
    quiet busy sunny rainy noisy tiny huge cosy shabby modern ancient friendly crowded
    peaceful chaotic colourful elegant rustic windy foggy lively sleepy gorgeous humble
    spicy bitter sweet salty smoky fresh frozen golden silver wooden velvet brisk gentle
    """
)
NOUNS = _words(
    """
    harbour bakery library garden rooftop market bridge station cafe museum studio lake
    forest beach valley village square chapel stadium theatre gallery pier canal vineyard
    orchard meadow cellar attic balcony courtyard workshop greenhouse lighthouse festival
    """
)
REASONS = _phrases(
    "it helps me relax|it reminds me of my childhood|my doctor suggested it|"
    "a friend got me into it|it is good for my back|it keeps me sane after work|"
    "I met my partner that way|it is cheap and close by|I can do it with the kids|"
    "it clears my head|I grew up near there|it was on my list for years"
)


def _detail(rng: random.Random) -> str:
    """A clause that makes a memory its own: real memories are rarely word-for-word alike, and an
    HNSW graph over thousands of identical vectors is not what a service meets."""
    pick = rng.randrange(3)
    if pick == 0:
        return f" near the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
    if pick == 1:
        return f" because {rng.choice(REASONS)}"
    return f" since {rng.randint(1995, 2025)}, mostly at the {rng.choice(NOUNS)}"


def memory_text(rng: random.Random) -> tuple[str, str, str | None, str | None]:
    """One synthetic memory: ``(category, content, slot, slot_value)``."""
    kind = rng.choices(
        ["preference", "profile", "entity", "event", "lesson"], weights=[35, 20, 15, 25, 5]
    )[0]
    c = rng.choice
    more = _detail(rng)
    if kind == "preference":
        pick = rng.randrange(4)
        if pick == 0:
            activity = c(ACTIVITIES)
            text = f"I love {activity} on weekends with {c(NAMES)}{more}."
            return kind, text, f"likes:{activity}", "yes"
        if pick == 1:
            thing, value = c(THINGS), c(VALUES)
            text = f"My favorite {thing} is {value}{more}."
            return kind, text, f"favorite {thing}", value.lower()
        if pick == 2:
            food = c(FOODS)
            return kind, f"I don't like {food} anymore{more}.", f"likes:{food}", "no"
        return kind, f"I'm a huge fan of {c(GENRES)} music, especially live{more}.", None, None
    if kind == "profile":
        pick = rng.randrange(3)
        if pick == 0:
            city = c(CITIES)
            return kind, f"I live in {city}{more}.", "lives in", city.lower()
        if pick == 1:
            job = c(JOBS)
            return kind, f"I work as a {job} at a {c(ADJECTIVES)} company{more}.", "works", job
        return kind, f"I have {rng.randint(1, 4)} kids and a {c(ADJECTIVES)} garden.", None, None
    if kind == "entity":
        if rng.random() < 0.5:
            return kind, f"My {c(RELATIONS)} {c(NAMES)} lives in {c(CITIES)}{more}.", None, None
        return kind, f"I have a {c(ADJECTIVES)} {c(PETS)} named {c(NAMES)}.", None, None
    if kind == "event":
        return kind, f"I went to {c(PLACES)} in {c(CITIES)} {c(TIMES)}{more}.", None, None
    return kind, f"Fixed {c(ERRORS)} by {c(FIXES)}{more}.", None, None


def query_text(rng: random.Random) -> str:
    """A search as an agent would phrase it: a paraphrase, not a copy, of what was stored."""
    c = rng.choice
    return c(
        [
            f"does the user enjoy {c(ACTIVITIES)}",
            f"what is their favorite {c(THINGS)}",
            f"which city do they live in, {c(CITIES)}?",
            f"what job does the user have, {c(JOBS)}",
            f"trip to {c(CITIES)} recently",
            f"who is {c(NAMES)}",
            f"food they dislike such as {c(FOODS)}",
            f"how was {c(ERRORS)} fixed",
            f"{c(GENRES)} music concerts",
        ]
    )


class DenseEmbedder:
    """A stand-in for a model's embeddings: every word a fixed random dense direction, a text the
    normalised sum of its words'. Dense vectors make the HNSW scan do the work a model's would
    (the hashing embedder's sparse vectors make it unusually cheap)."""

    def __init__(self, dim: int = 384) -> None:
        self._dim = dim
        self._words: dict[str, list[float]] = {}

    @property
    def identity(self) -> str:
        return f"bench-dense:v1:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def vector(self, text: str) -> list[float]:
        words = [self._word(word) for word in content_words(text)] or [[1.0] * self._dim]
        total = [sum(column) for column in zip(*words, strict=True)]
        norm = math.sqrt(sum(value * value for value in total)) or 1.0
        return [value / norm for value in total]

    def _word(self, word: str) -> list[float]:
        found = self._words.get(word)
        if found is None:
            rng = random.Random(word)
            found = self._words[word] = [rng.gauss(0.0, 1.0) for _ in range(self._dim)]
        return found

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vector(text) for text in texts]


EMBEDDERS: dict[str, Embedder] = {"hashing": HashingEmbedder(), "dense": DenseEmbedder()}


def vector_of(embedder: Embedder, text: str) -> list[float]:
    if isinstance(embedder, DenseEmbedder):
        return embedder.vector(text)
    return embed_text(text, embedder.dim)


def rows(
    count: int, seed: int, tenant_id: uuid.UUID, source: uuid.UUID, embedder: Embedder
) -> Iterator[tuple[Any, ...]]:
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for n in range(count):
        category, content, slot, value = memory_text(rng)
        moment = start + timedelta(seconds=n)
        vector = Vector(vector_of(embedder, content))
        yield (
            tenant_id, uuid.UUID(int=rng.getrandbits(128)), f"user-{rng.randrange(USERS)}", None,
            category, slot, value, content, 0.8, source, 1, [n + 1], vector, embedder.identity,
            None, moment, moment,
        )  # fmt: skip
