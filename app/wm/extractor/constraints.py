"""Which user sentences state a constraint or a preference (every keyword of guard C).

Owns the rule: a sentence with a guard-C keyword is a constraint when it is phrased as one —
an instruction ("never …", "don't …", "prefer X", "use X instead of Y"), a wish or rule about
the work ("I don't want …", "you must …"), or, outside a conversation between people, a
statement whose keyword only states rules ("must", "required", "forbidden", "no longer",
"prefers", "instead of", "avoid" and the CJK ones). "must have left" is a guess, not a rule; a
question states none. A speaker's own preference ("I prefer tabs over spaces", "I'd rather
…") is a taste, not an instruction about the task: it is a fact about the user (Key Facts, and
long-term memory), never a protected constraint. Never decides the section's op.
"""

from __future__ import annotations

import re
from typing import Final

from app.wm.guards import is_constraint

_DIRECTIVE: Final = re.compile(
    r"^(?:\d+[.)]\s*)?(?:(?:no|ok|okay|yes|also|and|but|so|well|remember|note|please)[,!.:]?\s+)*"
    r"(?:please\s+|make sure(?: to)?\s+|ensure\s+|remember to\s+)?"
    r"(?:don['’]?t|do not|never|always|only|avoid|use|keep|stop|just|prefer)\b"
    r"|\b(?:I|we)\s+(?:(?:do not|don['’]t|never|only|no longer)\s+(?:want|need|like|use|fly|"
    r"eat|drink|work|accept|allow)|(?:always|only)\s+(?:want|need|use|fly)|"
    r"must(?: not| never| always)?|require|need you to)\b"
    r"|\byou\s+(?:must|should|need to|have to|can only|cannot|can['’]t|may not|are not allowed|"
    r"are required|must never|should never|should always)\b"
    r"|^(?:不要|必须|禁止|务必|只能|只用|不许)",
    re.IGNORECASE,
)
# Keywords that only state rules (never a habit or a fact, as "never", "always", "only" can).
_RULE_WORD: Final = re.compile(
    r"(?<![\w'’])(?:must|require[sd]?|required|forbids?|forbidden|no\s+longer|"
    r"prefer(?:s|red)?|instead\s+of|avoids?)(?![\w'’])|不要|必须|禁止|务必|只能|只用|不许",
    re.IGNORECASE,
)
_PREFERENCE: Final = re.compile(
    r"\b(?:I|we)(?:['’]d|\s+(?:would|do|really|still|now|also|generally|usually|much|definitely))*"
    r"\s+(?:prefer(?:red)?|rather)\b",
    re.IGNORECASE,
)
"""A speaker stating their own preference: a taste, which these words alone never make a rule."""
_GUESS: Final = re.compile(
    r"\bmust(?:n['’]t)?\s+have\s+(?:been|had|got|gone|left|lost|forgot|forgotten|made|put|seen|"
    r"said|sent|taken|missed|done|come|run|heard|\w+ed)\b",
    re.IGNORECASE,
)


def _may_guess(folded: str) -> bool:
    return "must" in folded


def _may_prefer(folded: str) -> bool:
    return "prefer" in folded or "rather" in folded


# Every character the patterns above read as a letter of "must", "prefer" or "rather" (in any
# case) folds to that letter, so a sentence whose folded text lacks the word has no match: the
# patterns are not run over most sentences.


def is_constraint_sentence(sentence: str, *, chat: bool) -> bool:
    """Whether a user sentence is a constraint to keep in Task & Goals."""
    if sentence.rstrip().endswith(("?", "？")):
        return False
    folded = sentence.casefold()
    text = _GUESS.sub(" ", sentence) if _may_guess(folded) else sentence
    if _may_prefer(folded):
        text = _PREFERENCE.sub(" ", text)
    if not is_constraint(text):
        return False
    if _DIRECTIVE.search(text):
        return True
    return not chat and _RULE_WORD.search(text) is not None


def is_preference_sentence(sentence: str) -> bool:
    """Whether a sentence states its speaker's own preference ("I prefer X over Y")."""
    if sentence.rstrip().endswith(("?", "？")) or not _may_prefer(sentence.casefold()):
        return False
    return _PREFERENCE.search(sentence) is not None
