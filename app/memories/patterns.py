"""The sentence patterns of the rule extractor, one table per category.

Owns what a first-person statement must look like to be a profile fact, a preference, a named
entity, an event or a lesson, and what counts as small talk. Pure regular expressions over
normalised text (plain apostrophes); the decisions that use them are in ``rules``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_F: Final = re.IGNORECASE

PETS: Final = (
    r"dog|cat|puppy|kitten|horse|bird|parrot|rabbit|bunny|hamster|turtle|snake|fish|guinea pig"
)
_RELATIONS: Final = (
    r"wife|husband|partner|boyfriend|girlfriend|fiance|fiancee|sister|brother|mom|mum|mother|"
    r"dad|father|son|daughter|grandma|grandmother|grandpa|grandfather|aunt|uncle|cousin|niece|"
    r"nephew|friend|best friend|roommate|boss|manager|colleague|coworker|mentor|teacher|coach|"
    r"neighbor|neighbour|dog|cat|puppy|kitten|pet|horse|bird|rabbit|hamster|turtle|snake"
)


@dataclass(frozen=True, slots=True)
class SlotRule:
    """A pattern whose group ``value`` is the value of ``slot`` (profile attributes)."""

    name: str
    pattern: re.Pattern[str]
    slot: str
    confidence: float
    keyed: bool = False
    """The value names the attribute itself (``has pet:dog``, value ``yes``): owning a dog and
    owning a cat do not contradict each other."""


PROFILE_SLOTS: Final = (
    SlotRule(
        "profile.name", re.compile(r"\bmy name is (?P<value>[\w'-]+(?: [\w'-]+)?)", _F), "name", 0.9
    ),
    SlotRule(
        "profile.age",
        re.compile(r"\bi(?:'m| am) (?P<value>\d{1,3}) (?:years? old|yo)\b", _F),
        "age",
        0.9,
    ),
    SlotRule(
        "profile.home",
        re.compile(
            r"\bi (?:now |currently |still )?(?:live|reside|am living|'m living) (?:in|near) "
            r"(?P<value>[^,.;!?]+)|\bi(?:'m| am) (?:now |currently )?based in (?P<value2>[^,.;!?]+)"
            r"|\bi (?:just |recently |finally )?moved to (?P<value3>[^,.;!?]+)",
            _F,
        ),
        "lives in",
        0.8,
    ),
    SlotRule(
        "profile.origin",
        re.compile(r"\bi(?:'m| am) (?:originally )?from (?P<value>[^,.;!?]+)", _F),
        "from",
        0.8,
    ),
    SlotRule(
        "profile.job",
        re.compile(
            r"\bi (?:now |currently |still )?work as (?P<value>[^,.;!?]+)"
            r"|\bmy (?:job|profession|occupation) is (?P<value2>[^,.;!?]+)"
            r"|\bi(?:'m| am) (?:now |currently )?working as (?P<value3>[^,.;!?]+)",
            _F,
        ),
        "works as",
        0.8,
    ),
    SlotRule(
        "profile.employer",
        re.compile(
            r"\bi (?:now |currently |still )?work (?:at|for) (?P<value>[^,.;!?]+)"
            r"|\bi(?:'m| am) (?:now |currently )?(?:working|employed) (?:at|for|by) "
            r"(?P<value2>[^,.;!?]+)"
            r"|\bi (?:just |recently |finally )?started (?:a |my )?(?:new )?job (?:at|with) "
            r"(?P<value3>[^,.;!?]+)",
            _F,
        ),
        "works at",
        0.8,
    ),
    SlotRule(
        "profile.pet",
        re.compile(
            rf"\bi(?:'ve got| (?:now |still )?(?:have got|have|own)) "
            rf"(?:(?:a|an|one|two|three|\d+) )?(?P<value>(?:{PETS})s?)\b(?! (?:named|called)\b)",
            _F,
        ),
        "has pet",
        0.7,
        keyed=True,
    ),
    SlotRule(
        "profile.relationship",
        re.compile(
            r"\bi(?:'m| am) (?:now |happily |recently )?(?P<value>married|single|divorced|engaged|"
            r"widowed|separated)\b",
            _F,
        ),
        "relationship status",
        0.8,
    ),
    SlotRule(
        "profile.diet",
        re.compile(
            r"\bi(?:'m| am) (?:now |a |an )?(?P<value>vegan|vegetarian|pescatarian|"
            r"lactose intolerant|gluten intolerant)\b",
            _F,
        ),
        "diet",
        0.8,
    ),
)

PROFILE_FACTS: Final = (
    (
        "profile.family",
        re.compile(
            r"\bi (?:have|'ve got|have got) (?:a |an |one |two |three |four |five |\d+ )"
            r"(?:\w+ )?(?:kids?|children|sons?|daughters?|brothers?|sisters?|siblings?|"
            r"grandchildren)\b",
            _F,
        ),
        0.7,
    ),
    (
        "profile.study",
        re.compile(
            r"\bi(?:'m| am) (?:currently )?(?:studying|majoring in)\b|\bi (?:studied|graduated)\b",
            _F,
        ),
        0.7,
    ),
    (
        "profile.project",
        re.compile(
            r"\bi (?:own|run) (?:my own|a|an) [\w-]+|\bi have my own [\w-]+"
            r"|\bi(?:'m| am) (?:(?:also|now|still) )?"
            r"(?:running|working on|building|writing|training for|studying for)\b",
            _F,
        ),
        0.6,
    ),
    (
        "profile.identity",
        re.compile(
            r"\bi(?:'m| am) (?:a|an) (?!(?:bit|little|lot|big|huge|total|fan|mess|sucker|good|"
            r"great|quick|real|part|fan)\b)(?:[\w-]+ ){0,2}[\w-]+(?=\s*(?:[,.!;\-–—]|$|\b(?:at|in|"
            r"for|and|who|with|from|now)\b))",
            _F,
        ),
        0.6,
    ),
)

WITHDRAWALS: Final = (
    (re.compile(r"\bi no longer (?=\w)", _F), "I "),
    (re.compile(r"\bi(?:'m| am) no longer (?=\w)", _F), "I'm "),
    (
        re.compile(
            r"\bi (?:don't|do not) (?P<verb>live|work|have|own)\b(?P<rest>.*?)"
            r"\s*\b(?:anymore|any more)\b",
            _F,
        ),
        r"I \g<verb>\g<rest>",
    ),
    (
        re.compile(r"\bi(?:'m| am) not (?P<rest>.*?)\s*\b(?:anymore|any more)\b", _F),
        r"I'm \g<rest>",
    ),
)
"""A profile statement withdrawn ("I no longer live in Berlin", "I don't have a dog anymore",
"I'm not married anymore"), as the positive statement it takes back: read by the profile
patterns, its value negated."""
COMPARISON: Final = re.compile(
    r"^(?P<preferred>[\w' -]+?) (?:over|rather than|instead of|more than|better than) "
    r"(?P<other>[\w' -]+)",
    _F,
)
"""A preference between two things ("tabs over spaces"); with "prefer", also "X to Y"."""
RATHER: Final = re.compile(r"\bi(?:'d| would) (?:much )?(?:rather|prefer) (?P<object>.+)", _F)
"""A preference said as a wish ("I'd rather use X instead of Y"): one only when it compares."""
COMPARED_VERB: Final = re.compile(
    r"^(?:to )?(?:use|using|have|having|eat|eating|drink|drinking|go with|going with|"
    r"work with|working with|write|writing)\s+",
    _F,
)
"""How a compared thing is introduced ("using Python over Rust" compares Python and Rust)."""
COMPARISON_TO: Final = re.compile(r"^(?P<preferred>[\w' -]+?) to (?P<other>[\w' -]+)", _F)
FAVOURITE: Final = re.compile(
    r"\bmy (?:all-time |absolute |current )?(?:favou?rite|fave|fav|top pick)(?: (?P<what>"
    r"[\w' -]+?))? (?:is|are|was|has to be|would be) (?P<value>[^,.;!?]+)",
    _F,
)
FAVOURITE_AFTER: Final = re.compile(
    r"(?P<value>[\w' -]+?) (?:is|are) (?:definitely |probably |still )?my (?:all-time |absolute "
    r")?(?:favou?rite|fave|top pick)(?: (?P<what>[\w -]+))?",
    _F,
)
FAVOURITE_MENTION: Final = re.compile(
    r"\bmy (?:all-time |absolute )?(?:favou?rite|fave|top pick)", _F
)
"""What every ``FAVOURITE_AFTER`` match holds, searched first: that pattern tries every word of
a sentence as the start of its value, so it is slow on a long sentence with no favourite."""
DISLIKE: Final = re.compile(
    r"\bi (?:really |just |honestly |still )?(?:don't|do not|no longer|can't|cannot|never) "
    r"(?:really |even |much )?(?:like|love|enjoy|stand|eat|drink)\b(?: to)? (?P<object>.+)"
    r"|\bi (?:really |just |honestly )?(?:hate|dislike|detest|despise|can't stand) (?P<object2>.+)"
    r"|\bi(?:'m| am) (?:not|no longer) (?:a (?:big )?fan of|into|big on|keen on) (?P<object3>.+)",
    _F,
)
LIKE: Final = re.compile(
    r"\bi (?:(?:really|absolutely|totally|also|just|still|truly|do|so|definitely|always|now|"
    r"might|may|probably|kinda|kind of|sort of) )*"
    r"(?P<verb>love|loved|like|liked|enjoy|enjoyed|adore|prefer|preferred)\b (?P<object>.+)"
    r"|\bi(?:'m| am) (?:(?:really|so|super|very|totally|also|still) )*(?:into|passionate about|"
    r"a (?:big |huge )?fan of|keen on|obsessed with|crazy about|fond of)\b (?P<object2>.+)",
    _F,
)
WISH: Final = re.compile(
    r"\bi(?:'d| would) (?:really |so |totally )?(?:love|like|enjoy|prefer) (?:to )?(?P<object>.+)"
    r"|\bi (?:wish|hope) (?:to |i could )?(?P<object2>.+)",
    _F,
)
"""A wish is not yet a preference: kept as a candidate below the confidence threshold."""
HYPOTHETICAL: Final = re.compile(r"\bif i\b|\bunless i\b", _F)
PASSION: Final = re.compile(
    r"^(?P<object>[\w' -]{3,60}?) (?:makes|made|make) me (?:so |really |very |super )?"
    r"(?:happy|smile|feel alive|joyful|calm|relaxed)\b"
    r"|^(?P<object2>[\w' -]{3,60}?) (?:is|has been|was|'s|'s been) (?:always )?(?:my|a) "
    r"(?:passion|escape|stress-buster|happy place|thing)\b"
    r"|\bmy (?:passion|hobby|hobbies) (?:is|are|has been|for) (?P<object3>[^,.;!?]+)",
    _F,
)
REFERENTIAL_OBJECT: Final = re.compile(
    r"^(?:that|this|these|those|it|them|him|her|you|you're|your|yours|how|what|when|where|"
    r"the way|seeing you|hearing|to hear|the (?:pic|photo|picture|idea|sound) of)\b",
    _F,
)

ENTITY: Final = (
    re.compile(rf"\b[Mm]y (?P<relation>{_RELATIONS}),? (?P<name>[A-Z][a-z]{{2,}})\b"),
    re.compile(rf"\b(?P<name>[A-Z][a-z]{{2,}}),? (?:is )?my (?P<relation>{_RELATIONS})\b"),
    re.compile(
        rf"\b(?:[Aa]|[Mm]y) (?P<relation>{_RELATIONS}) (?:named|called) (?P<name>[A-Z][a-z]{{2,}})"
    ),
    re.compile(rf"\b[Mm]y (?P<relation>{_RELATIONS})(?:'s name)? is (?P<name>[A-Z][a-z]{{2,}})"),
)

EVENT_ACTION: Final = re.compile(
    r"\b(?:i|we)(?: (?:just|recently|finally|also|even|actually|first))? (?:went|visited|"
    r"attended|joined|started|began|finished|completed|got|bought|moved|took|applied|met|adopted|"
    r"ran|won|lost|graduated|traveled|travelled|booked|quit|opened|launched|received|made|"
    r"painted|wrote|saw|watched|tried|signed up|volunteered|celebrated|passed|hosted|organized|"
    r"organised|created|built|performed|played|gave|spent|climbed|hiked|visited|contacted|"
    r"reached out|taught|sold|found|released|published|ran|retired|married)\b"
    r"|^(?:just |finally |recently )?(?:went|took|lost|got|started|finished|visited|joined|"
    r"moved|bought|had|met|attended|tried|made|saw|been)\b"
    r"|\bi(?:'m| am) (?:(?:also|now|finally|really) )?(?:hosting|starting|opening|moving|going to|"
    r"gonna|planning|organizing|organising|launching|taking|visiting|attending|joining|"
    r"running|teaching|performing|traveling|travelling|flying|competing)\b"
    r"|\bi(?:'ve| have) (?:just |recently |finally |already )?(?:been to|started|joined|finished|"
    r"got|gotten|taken|made|signed up|applied|begun|adopted|bought|moved|visited|completed)\b",
    _F,
)
LIFE_EVENT: Final = re.compile(
    r"\b(?:moved|graduated|adopted|got married|married|got engaged|quit|retired|got promoted|"
    r"had a baby|lost my job|got a (?:new )?job|started a (?:new )?job|applied to|signed up for|"
    r"joined|opened|launched)\b",
    _F,
)
TIME_MARKER: Final = re.compile(
    r"\b(?:yesterday|today|tonight|this (?:morning|afternoon|evening|week|weekend|month|year)|"
    r"last (?:night|week|weekend|month|year|time|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|mon|tue|tues|wed|thu|thurs|fri|sat|sun|summer|winter|spring|fall|autumn)|"
    r"next (?:week|weekend|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"summer|winter|spring|fall|autumn)|upcoming|"
    r"(?:\d+|a|one|two|three|four|five|six|a few|a couple of|few) (?:days?|weeks?|months?|"
    r"years?) ago|recently|lately|over the weekend|the other day|since (?:our|we) last|"
    r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|in (?:january|february|"
    r"march|april|may|june|july|august|september|october|november|december|\d{4})|"
    r"\d{4}-\d{2}-\d{2}|\d{1,2} (?:january|february|march|april|may|june|july|august|september|"
    r"october|november|december))\b",
    _F,
)

LEARNED: Final = re.compile(
    r"\bi(?:'ve| have)? (?:learned|learnt|realized|realised|found out|figured out) (?:that |how )?",
    _F,
)
CORRECTION: Final = re.compile(
    r"^(?:no|nope|actually|wrong)[,!.]\s+\S|^that(?:'s| is) (?:wrong|not right|not correct|not "
    r"what i)",
    _F,
)
FIX: Final = re.compile(
    r"\b(?:fixed|solved|resolved)\b.*\bby\b|\bthe (?:fix|solution|root cause|cause|problem|issue)"
    r" (?:was|is)\b|\b(?:failed|broke|crashed) because\b|\bworks? now (?:after|that|because)\b",
    _F,
)
SUBJECTLESS_VERBS: Final = (
    r"went|took|lost|got|started|finished|visited|joined|moved|bought|had|met|attended|tried|made|"
    r"saw|love|loved|enjoyed"
)
SUBJECTLESS: Final = re.compile(rf"^(?:just |finally |recently )?(?:{SUBJECTLESS_VERBS})\b", _F)
"""Chat drops the subject ("Took a trip to Rome last week."): such a sentence is the speaker's."""
NEGATION: Final = re.compile(
    r"\b(?:won't|will not|wouldn't|never|not|don't|do not|didn't|did not|can't|cannot|no)\b"
    r"(?:\W+\w+){0,2}\W*$",
    _F,
)
"""A negation just before a life-event verb ("I won't quit"): nothing happened."""
ERROR_SEEN: Final = re.compile(r"\b\w*(?:Error|Exception)\b|\btraceback\b|\bfailed\b", _F)

HEDGE: Final = re.compile(
    r"\b(?:maybe|might|perhaps|probably|i think|i guess|i suppose|kinda|kind of|sort of|"
    r"not sure|i'm not sure|possibly|used to)\b",
    _F,
)

CHIT_CHAT: Final = re.compile(
    r"^(?:hi|hello|hey|hiya|yo|howdy|good (?:morning|afternoon|evening|night)|thanks|thank you|"
    r"thx|ty|cheers|bye|goodbye|see you|see ya|talk (?:to you )?soon|take care|catch you later|"
    r"ok|okay|sure|cool|nice|great|awesome|amazing|wow|whoa|lol|haha|yeah|yep|yup|nope|nah|"
    r"totally|exactly|agreed|same here|congrats|congratulations|good luck|sounds good|"
    r"sounds great|no worries|no problem|of course|definitely|absolutely|for sure|glad to hear|"
    r"i'm glad|so glad|that's (?:great|awesome|cool|amazing|so cool|wonderful|fantastic|"
    r"incredible|nice|so nice|lovely|beautiful|sweet|so sweet|true|right|fair)|"
    r"you're (?:right|welcome|the best|so sweet|amazing|awesome)|love (?:that|it|the|your|this)|"
    r"what a|how (?:cool|nice|great|sweet|lovely)|me too|same|(?:good|nice|great|so good) to "
    r"(?:see|hear from|meet|talk to|chat with) you|long time no see)\b",
    _F,
)
LEADING_FILLER: Final = re.compile(
    r"^(?:(?:so|well|also|oh|and|but|yeah|yes|wow|btw|by the way|honestly|anyway|plus|"
    r"guess what|you know what)[,!.]?\s+)+",
    _F,
)
ADDRESSEE: Final = re.compile(r"^(?:[A-Z][a-z]+)[,!]\s+")
CLAUSE_END: Final = re.compile(
    r"[,.;:!?()\"]| - | – | — |\b(?:and|but|because|so|since|when|which|while|though|although|"
    r"as|over|rather than|instead of)\b",
    _F,
)


_NAMED_GROUP: Final = re.compile(r"\(\?P<\w+>")


def any_of(patterns: tuple[re.Pattern[str], ...]) -> re.Pattern[str]:
    """One pattern that finds something iff one of ``patterns`` does (``search``), for rules
    whose patterns each start at the text's start (``^``) or at a word beginning with i, m, w or
    a (any case), or with a capital letter: its scan tries no other position. Their groups are
    dropped (it says whether, not what) and their flags kept, per pattern."""
    body = "|".join(
        ("(?i:{})" if pattern.flags & re.IGNORECASE else "(?:{})").format(
            _NAMED_GROUP.sub("(?:", pattern.pattern)
        )
        for pattern in patterns
    )
    return re.compile(rf"^(?:{body})|(?<!\w)(?=(?i:[imwa])|[A-Z])(?:{body})")


STATEMENT_PATTERNS: Final = (
    LEARNED,
    FAVOURITE,
    FAVOURITE_MENTION,
    DISLIKE,
    RATHER,
    LIKE,
    PASSION,
    WISH,
    *(pattern for pattern, _ in WITHDRAWALS),
    *(rule.pattern for rule in PROFILE_SLOTS),
    *(pattern for _, pattern, _ in PROFILE_FACTS),
    *ENTITY,
    EVENT_ACTION,
)
"""Every pattern a user's statement about themselves is read with: a sentence that none of
them finds anything in states no memory (``FAVOURITE_MENTION`` stands for ``FAVOURITE_AFTER``,
and a withdrawal is read again as the statement it takes back only when one is found)."""
ANY_STATEMENT: Final = any_of(STATEMENT_PATTERNS)
"""One scan of a sentence instead of one per pattern, for the many that state nothing."""
