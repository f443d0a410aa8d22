"""A new thread's title from its first question: the subject, not the opening words."""

from __future__ import annotations

import pytest

from albert.chat.thread_titles import MAX_TITLE_CHARS, title_from_question


@pytest.mark.parametrize(
    ("question", "title"),
    [
        ("What are the best stablecoin yields on Base?", "Best stablecoin yields on Base"),
        ("what are the best yields on Arbitrum", "Best yields on Arbitrum"),
        ("Hi, can you show me the top vaults for WETH?", "Top vaults for WETH"),
        ("please tell me about Lido", "Lido"),
        ("What's stETH trading at?", "stETH trading at"),
        ("Analyse PEPE", "Analyse PEPE"),
        ("How risky is the Syrup USDC vault?", "How risky is the Syrup USDC vault"),
        ("  what   is\n\tPEPE ?? ", "PEPE"),
        ("highest APY on Base", "Highest APY on Base"),  # "hi" only as a whole word
        ("listing fees", "Listing fees"),
        ("Hey Albert, what is the APY of Syrup USDC?", "APY of Syrup USDC"),
        ("albert: top yields", "Top yields"),
        ("Hello from thread two", "Hello from thread two"),  # a greeting only as one
        ("hi", "Hi"),  # nothing but an opening keeps its words
        ("What is?", "What is"),
        ("?!", "?!"),
    ],
)
def test_title_is_the_questions_subject(question: str, title: str) -> None:
    assert title_from_question(question) == title


def test_questions_that_begin_alike_get_titles_that_differ_early() -> None:
    a = title_from_question("What are the best stablecoin yields on Base right now?")
    b = title_from_question("What are the best yields for ETH on Arbitrum this week?")
    assert a[:16] != b[:16]


def test_a_long_question_ends_at_a_word_within_the_limit() -> None:
    question = "best stablecoin yields " + "on many different chains and protocols " * 5
    title = title_from_question(question)
    assert len(title) <= MAX_TITLE_CHARS
    assert title.endswith("…")
    assert title.removesuffix("…") == question[: len(title) - 1].rstrip().capitalize()


def test_a_long_token_is_cut_not_dropped() -> None:
    address = "0x" + "ab" * 40
    title = title_from_question(f"is {address} risky?")
    assert len(title) == MAX_TITLE_CHARS
    assert title.startswith("Is 0xabab") and title.endswith("…")


def test_no_words_no_title() -> None:
    assert title_from_question(" \n\t") == ""


@pytest.mark.parametrize(
    ("question", "title"),
    [
        ("\u200b\u200bwhat is Aave", "Aave"),
        ("\ufeffwhat is the\u200b best pool?", "Best pool"),
        ("\x00\x07what is PEPE", "PEPE"),
        ("\u202eevahc", "Evahc"),
        ("\u2066what is Lido\u2069", "Lido"),
        ('"what is Aave?"', "Aave"),
        ("“what is Aave”", "Aave"),
        ("# what is Aave", "Aave"),
        ("**what is the best pool**", "Best pool"),
        ("> what is the best pool", "Best pool"),
        ("- what are the top vaults", "Top vaults"),
        ("`stETH` price", "`stETH` price"),
        ("什么是以太坊？", "什么是以太坊"),
        ("ما هو أفضل عائد؟", "ما هو أفضل عائد"),
        ("ß yields", "ß yields"),
        ("👨‍👩‍👧 fund", "👨‍👩‍👧 fund"),
        ("-1% yield pools", "-1% yield pools"),
        ("\u200b", ""),
        ("'", "'"),
    ],
)
def test_invisible_characters_and_marks_are_not_the_title(question: str, title: str) -> None:
    assert title_from_question(question) == title
