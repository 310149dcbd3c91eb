"""Did-you-mean suggestions for unknown names."""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or a list of the choices.

    Close spellings come first (``learning_rat``); then abbreviations, which spelling distance misses:
    ``lr`` for ``learning_rate`` (the initials of its words), ``ent_coef`` for ``entropy_coef`` (each part a
    prefix of a word), ``gae`` for ``gae_lambda``; ``lr`` on SAC names every ``*_learning_rate``.
    """
    import difflib  # here: every listing command imports this module, few of them suggest anything

    choices = sorted(set(choices))
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if close:
        return f" (did you mean '{close[0]}'?)"
    short = abbreviated(name, choices)
    if short:
        quoted = [f"'{c}'" for c in short[:3]]
        listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
        return f" (did you mean {listed}?)"
    if not choices:
        return ""
    if len(choices) <= 8:
        return f" (choose from: {', '.join(choices)})"
    return f" (e.g. {', '.join(choices[:8])}, ...)"


def abbreviated(name: str, choices: Iterable[str]) -> list[str]:
    """The choices ``name`` abbreviates, best kind first: every word abbreviated (``lr`` -> ``learning_rate``),
    then the leading words (``gae`` -> ``gae_lambda``), then the trailing words (``lr`` -> ``actor_learning_rate``)."""
    key = name.lower().strip("_")
    if len(key) < 2:
        return []
    tiers: tuple[list[str], list[str], list[str]] = ([], [], [])
    for choice in choices:
        words = [w for w in choice.lower().split("_") if w]
        if len(words) > 1 and _spells(key, words):
            tiers[0].append(choice)
        elif choice.lower().startswith(key + "_"):
            tiers[1].append(choice)
        elif any(_spells(key, words[i:]) for i in range(1, len(words))):
            tiers[2].append(choice)
    return next((tier for tier in tiers if tier), [])


def _spells(key: str, words: list[str]) -> bool:
    """Whether ``key`` (underscores optional) is non-empty prefixes of ``words``, in order, covering every word."""
    key = key.replace("_", "")
    if not words:
        return not key
    word = words[0]
    return any(word.startswith(key[:n]) and _spells(key[n:], words[1:]) for n in range(1, min(len(key), len(word)) + 1))
