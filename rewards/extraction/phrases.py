"""Words that mark, negate, hedge or join answers, in a dozen languages (regexes).

Data for ``free_form``; each pattern is documented where it is defined. Languages: English,
Chinese, French, Spanish, German, Russian, Arabic, Hindi, Japanese, Korean, Italian,
Portuguese, Indonesian, Vietnamese, Bengali, Thai, Swahili (final-answer phrases); the
shorter lists (copulas, negations, hedges, connectors) cover the first nine and a few more.
"""

from __future__ import annotations

import re

__all__ = [
    "ANSWER_PHRASE",
    "CONNECTOR_GAP",
    "COPULA",
    "HEDGE",
    "NEGATION",
    "PHRASE_KEY",
    "STRONG_HEDGE",
]

# Final-answer phrases: each alternative starts with one of ``_PHRASE_WORDS``; those are
# found first by a case-sensitive search for their usual spellings (fast in any regex
# engine), and the full phrase is then matched where one was found.
_PHRASE_WORDS = (
    "answer", "result", "solution", "答案", "结果", "答", "réponse", "résultat", "respuesta",
    "resultado", "antwort", "ergebnis", "ответ", "الإجابة", "الاجابة", "الجواب", "إجابة",
    "उत्तर", "答え", "解答", "정답", "답", "risposta", "resposta", "jawaban", "đáp", "উত্তর",
    "คำตอบ", "jibu",
)
PHRASE_KEY = re.compile(
    "|".join(sorted({v for w in _PHRASE_WORDS for v in (w, w.capitalize(), w.upper())},
                    key=len, reverse=True))
)
_L = r"(?<![^\W\d_])"  # not preceded by a letter (Latin-script words)
ANSWER_PHRASE = re.compile(
    "|".join([
        _L + r"answer\s*(?:is|would\s+be|should\s+be|will\s+be|=|(?=\$))",
        _L + r"(?:result|solution)\s+is",
        r"答案\s*(?:应该?是|应为|應為|是|为|為|[:：=])?|结果\s*(?:是|为)|答\s*[:：]",
        _L + r"réponse(?:\s+finale)?\s*(?:est|[:=])|" + _L + r"résultat\s+est",
        _L + r"respuesta(?:\s+final)?\s*(?:es|[:=])|" + _L + r"resultado\s+es",
        _L + r"antwort\s*(?:ist|lautet|[:=])|" + _L + r"ergebnis\s*(?:ist|lautet|[:=])",
        _L + r"ответ\s*(?:будет|равен|равна|равно|[:=—-])?",
        r"(?:الإجابة|الاجابة|الجواب|إجابة)(?:\s+النهائية)?\s*(?:هي|هو|[:=])?",
        r"उत्तर\s*(?:है|[:=])?",
        r"(?:答え|解答)\s*(?:は|[:：=])|答\s*は",
        r"(?:정답|답)\s*(?:은|는|[:=])",
        _L + r"risposta\s*(?:è|[:=])|" + _L + r"resposta\s*(?:é|[:=])",
        _L + r"jawaban(?:nya)?\s*(?:adalah|[:=])|" + _L + r"đáp\s+án\s*(?:là|[:=])",
        r"উত্তর\s*(?:হল|[:=])?|คำตอบ\s*(?:คือ|[:=])?|" + _L + r"jibu\s*(?:ni|[:=])",
    ]),
    re.IGNORECASE,
)
# The other patterns only ever read short windows; a lookahead on their first characters
# still lets the engine skip most positions.
COPULA = re.compile(
    r"(?=[iIaAwWeEbBgGsSvVlLtTрРсСэЭèéÈÉ是为為等يهب:])(?:"
    + _L + r"(?:is|are|was|equals?|be|becomes|gives|est|sont|vaut|es|son|vale|ist|sind|lautet"
    r"|beträgt|равен|равна|равно|равны|составляет|это|è|é)(?![^\W\d_])"
    r"|(?<![^\W\d_])(?:it|that|this|which|what)['’]s(?![^\W\d_])"
    r"|(?<!因)(?:是|为|為)|等于|等於|يساوي|هي|هو|बराबर|:)",
    re.IGNORECASE,
)
NEGATION = re.compile(
    r"(?=[nNcCiIaAwWpPkKнНلن'’不并でじ아])(?:"
    + _L + r"(?:not|never|no|none|cannot|isn't|aren't|wasn't|can't|ne|pas|nicht|kein|keine"
    r"|не|нет|ليس|لا|नहीं|não|non(?![-‐]))(?![^\W\d_])|n['’]t(?![^\W\d_])"
    r"|不是|不为|不等于|并非|ではない|ではありません|じゃない|아니)",
    re.IGNORECASE,
)
HEDGE = re.compile(
    r"(?=[oOmMpPaAeEqQvVиИмМtTfF或也可أریयशまもかた])(?:"
    + _L + r"(?:or|maybe|perhaps|possibly|probably|either|otherwise|alternatively|might|ou"
    r"|peut-être|o|quizás|quizá|oder|vielleicht|или|может|talvez|forse|atau)(?![^\W\d_])"
    r"|或|也许|可能|أو|ربما|या|शायद|または|もしくは|かもしれ|たぶん)",
    re.IGNORECASE,
)
# Hedges without the plain "or", which math prose also uses for "equivalently"
# ("$\\frac54$, or $1.25$"); the last-math step of a whole response uses these.
STRONG_HEDGE = re.compile(
    r"(?=[mMpPeEqQvVмМtTfF也可ربشかた])(?:"
    + _L + r"(?:maybe|perhaps|possibly|probably|either|might|peut-être|quizás|quizá|vielleicht"
    r"|может|talvez|forse|guess)(?![^\W\d_])"
    r"|也许|可能|ربما|शायद|かもしれ|たぶん)",
    re.IGNORECASE,
)
CONNECTOR_GAP = re.compile(
    r"[\s,;、，&]*(?:(?:and|or|et|ou|y|o|e|und|oder|и|или|i|and/or|sowie|和|或|或者|与|及|以及"
    r"|و|أو|और|या|と|または|及び)[\s,;、，]*)?",
    re.IGNORECASE,
)
