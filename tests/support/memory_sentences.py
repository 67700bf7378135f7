"""Sentences of the offline memory extractor's table with what each must give: the rule tests
check each one, and the one-scan tests run the same corpus through the old and the new scan."""

from __future__ import annotations

from app.memories.records import Category

C = Category

# sentence, category, rule, slot, slot value (None = no memory)
SENTENCES: list[tuple[str, Category | None, str | None, str | None, str | None]] = [
    ("I love creating art!", C.PREFERENCE, "preference.like", "likes:creat art", "yes"),
    (
        "I really enjoy dramas and emotionally-driven films.",
        C.PREFERENCE,
        "preference.like",
        "likes:drama",
        "yes",
    ),
    ("I'm a huge fan of jazz.", C.PREFERENCE, "preference.like", "likes:jazz", "yes"),
    (
        "I prefer tea over coffee.",
        C.PREFERENCE,
        "preference.comparison",
        "prefers:coffee|tea",
        "tea",
    ),
    ("I don't like coffee anymore.", C.PREFERENCE, "preference.dislike", "likes:coffee", "no"),
    ("I hate cold weather.", C.PREFERENCE, "preference.dislike", "likes:cold weather", "no"),
    ("I'm not into games.", C.PREFERENCE, "preference.dislike", "likes:game", "no"),
    ("My favorite color is teal.", C.PREFERENCE, "preference.favourite", "favorite color", "teal"),
    (
        "Harry Potter is my favorite book.",
        C.PREFERENCE,
        "preference.favourite",
        "favorite book",
        "harry potter",
    ),
    ("Contemporary is my top pick.", C.PREFERENCE, "preference.favourite", None, None),
    ("Dancing makes me so happy.", C.PREFERENCE, "preference.passion", "likes:danc", "yes"),
    ("Dance is my passion.", C.PREFERENCE, "preference.passion", "likes:dance", "yes"),
    ("I'd love to visit Japan.", C.PREFERENCE, "preference.wish", None, None),
    ("I live in Lisbon now.", C.PROFILE, "profile.home", "lives in", "lisbon"),
    ("I moved to Berlin last month.", C.PROFILE, "profile.home", "lives in", "berlin"),
    ("I'm originally from Sweden.", C.PROFILE, "profile.origin", "from", "sweden"),
    (
        "I work as a nurse at the city hospital.",
        C.PROFILE,
        "profile.job",
        "works as",
        "nurse city hospital",
    ),
    ("My name is Dana.", C.PROFILE, "profile.name", "name", "dana"),
    ("I am 34 years old.", C.PROFILE, "profile.age", "age", "34"),
    ("I'm married.", C.PROFILE, "profile.relationship", "relationship status", "marry"),
    (
        "I'm lactose intolerant, so no milk.",
        C.PROFILE,
        "profile.diet",
        "diet",
        "lactose intolerant",
    ),
    ("I have two kids.", C.PROFILE, "profile.family", None, None),
    ("I run my own dance studio.", C.PROFILE, "profile.project", None, None),
    ("I'm an assistant manager - it feels great.", C.PROFILE, "profile.identity", None, None),
    ("My sister Anna visits on Sundays.", C.ENTITY, "entity.named", None, None),
    ("I have a dog named Max.", C.ENTITY, "entity.named", None, None),
    ("Rob, my colleague, invited me to yoga.", C.ENTITY, "entity.named", None, None),
    ("I went to a pride parade last Friday.", C.EVENT, "event.dated", None, None),
    ("Took a short trip last week to Rome.", C.EVENT, "event.dated", None, None),
    ("I'm hosting a dance competition next month.", C.EVENT, "event.dated", None, None),
    ("I adopted a cat.", C.EVENT, "event.life", None, None),
    ("I've learned that breaks matter for my health.", C.LESSON, "lesson.learned", None, None),
    # Not memories: about the listener, referential, negated, not first person, no pattern.
    ("I love that you chose pottery.", None, None, None, None),
    ("I loved it.", None, None, None, None),
    ("I won't quit.", None, None, None, None),
    ("The weather is nice.", None, None, None, None),
    ("I am tired.", None, None, None, None),
    ("I used to love horses.", None, None, None, None),
    ("My favourite.", None, None, None, None),
]
