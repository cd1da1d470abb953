"""Text analysis shared by indexing and querying: one tokenizer, so the two can never drift.

Pipeline for a piece of text (the seed's normalisation plus what real corpora need):

1. Find *chunks*: runs of word characters joined by single connectors (``. - / : _ @ # +``),
   e.g. ``sleuth.engine.Engine``, ``src/cli.py``, ``ABC-123``, ``v1.2.3``, ``snake_case``.
2. Normalise each chunk: Unicode NFKD, combining marks removed (accents folded), casefolded.
3. A chunk that looks like an identifier (has a connector, an underscore, a camelCase hump or a
   letter-digit mix) is indexed whole *and* in parts (split at connectors, underscores, camelCase
   and letter/digit boundaries). Other chunks are words.
4. Han, Hiragana, Katakana and Hangul runs become overlapping character bigrams (a lone character
   stays a unigram); other scripts are kept as words.
5. Words and identifier parts drop English stop words and terms shorter than ``TERM_MIN_CHARS``
   (except the configured important short terms) and are stemmed with Snowball English
   (Porter 2001, via PyStemmer). Whole identifiers are kept verbatim (lowercased).

Every token carries its ``[start, end)`` span in code points of the original text, which the
summaries use for highlights. All functions are pure.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from itertools import chain, islice, pairwise
from typing import NamedTuple

import Stemmer

from sleuth.text.stopwords import ENGLISH_STOP_WORDS, IMPORTANT_SHORT_TERMS

#: Terms shorter than this (in code points) are dropped unless listed as important short terms.
TERM_MIN_CHARS = 2
#: Terms longer than this are dropped (base64 blobs, hashes glued to text).
TERM_MAX_CHARS = 64

_CONNECTORS = ".\\-/:@#+'’"
# A chunk: word characters, optionally joined by single connectors between word characters.
_CHUNK_RE = re.compile(rf"\w+(?:[{_CONNECTORS}]\w+)*")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\u3131-\u318e]+")
_SPLIT_CONNECTOR_RE = re.compile(rf"[{_CONNECTORS}_]+")
# camelCase / PascalCase / acronym / digit boundaries: getHTTPResponse2 -> get HTTP Response 2
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+")
_HUMP_RE = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_LETTER_DIGIT_RE = re.compile(r"[^\W\d_]\d|\d[^\W\d_]")
_APOSTROPHES = "'’"

# PyStemmer's own cache is off (0): the chunk caches below hold every stem in use, and its cache
# made a stem cost 3 us instead of 0.5 us.
_STEMMER = Stemmer.Stemmer("english", 0)


class Token(NamedTuple):
    """One analysed term and the ``[start, end)`` code-point span of the text it came from (a named
    tuple: snippets make several per hit of every search)."""

    term: str
    start: int
    end: int


def fold(text: str) -> str:
    """Return ``text`` NFKD-normalised, without combining marks, casefolded (``"Café"`` → ``"cafe"``)."""
    if text.isascii():  # NFKD leaves ASCII alone, and ASCII has no combining marks: casefold is lower
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def _keep(term: str) -> bool:
    if term in IMPORTANT_SHORT_TERMS:
        return True
    return TERM_MIN_CHARS <= len(term) <= TERM_MAX_CHARS and term not in ENGLISH_STOP_WORDS


def _cjk_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _word_terms(word: str) -> list[str]:
    """Analyse one folded word without connectors (may still contain CJK runs)."""
    if word.isascii() or _CJK_RE.search(word) is None:
        return [_STEMMER.stemWord(word)] if _keep(word) else []
    terms: list[str] = []
    pos = 0
    for m in _CJK_RE.finditer(word):
        if m.start() > pos and _keep(word[pos : m.start()]):
            terms.append(_STEMMER.stemWord(word[pos : m.start()]))
        terms.extend(_cjk_bigrams(m.group()))
        pos = m.end()
    if pos < len(word) and _keep(word[pos:]):
        terms.append(_STEMMER.stemWord(word[pos:]))
    return terms


_IDENTIFIER_MARK_RE = re.compile(r"[_.\-/:@#+]")


def is_identifier(chunk: str) -> bool:
    """True when a raw chunk looks like a code identifier, path, ticket id or version number."""
    if _IDENTIFIER_MARK_RE.search(chunk) is not None:
        return True
    return _HUMP_RE.search(chunk) is not None or _LETTER_DIGIT_RE.search(chunk) is not None


def identifier_parts(chunk: str) -> list[str]:
    """Split a raw identifier into its parts: connectors, underscores, camelCase, digits.

    ``"getHTTPResponse_v2"`` → ``["get", "HTTP", "Response", "v", "2"]`` (not folded).
    """
    parts: list[str] = []
    for piece in _SPLIT_CONNECTOR_RE.split(chunk):
        if piece:
            parts.extend(_CAMEL_RE.findall(piece))
    return parts


#: Distinct chunks whose analysis each cache keeps (it is emptied when full).
CHUNK_CACHE_ENTRIES = 262_144


class _ChunkCache(dict[str, tuple[str, ...]]):
    """Chunk → its tokens, computed on first sight by ``analyse`` (vocabularies are Zipfian: most
    chunks of a text were seen before). Looked up with ``cache[chunk]`` from C (``map``), so a text's
    known chunks cost no Python call at all; emptied whole when ``CHUNK_CACHE_ENTRIES`` are held."""

    __slots__ = ("_analyse",)

    def __init__(self, analyse: Callable[[str], tuple[str, ...]]) -> None:
        super().__init__()
        self._analyse = analyse

    def __missing__(self, chunk: str) -> tuple[str, ...]:
        if len(self) >= CHUNK_CACHE_ENTRIES:
            self.clear()
        tokens = self[chunk] = self._analyse(chunk)
        return tokens


def _analyse_chunk(chunk: str) -> tuple[str, ...]:
    """Index terms of one raw chunk (see :data:`_CHUNK_TERMS`, which caches them)."""
    if chunk.isascii() and chunk.isalpha() and (chunk.islower() or chunk[1:].islower()):
        # Most chunks: a plain ASCII word, lowercase or capitalised. No apostrophe, connector,
        # digit or camelCase hump, so not an identifier (below), and folding it is lowering it.
        word = chunk.lower()
        return (_STEMMER.stemWord(word),) if _keep(word) else ()
    stripped = chunk.strip(_APOSTROPHES)
    if any(a in stripped for a in _APOSTROPHES):
        # Possessives and contractions: "engine's" -> "engine", "don't" -> "dont" (a stop word).
        head, _, tail = stripped.replace("’", "'").partition("'")
        stripped = head if tail in ("s", "") else head + tail
    if not stripped:
        return ()
    if not is_identifier(stripped):
        return tuple(_word_terms(fold(stripped)))
    heads = _whole_terms(fold(stripped))
    terms = list(heads)
    for part in identifier_parts(stripped):
        for term in _word_terms(fold(part)):
            if term not in heads:
                terms.append(term)
    return tuple(terms)


def _whole_terms(whole: str) -> list[str]:
    """The terms of an identifier chunk as a whole (``whole``: the chunk folded), before its parts'.

    A chunk that is an identifier only by its case (``PagerDuty``, ``ParseDuration``: camelCase
    humps of letters) folds to a plain word, and is that word's terms (stemmed: ``pagerduti``), so
    that a query typing it in lowercase (``pagerduty``, analysed as a word) finds it, and a query
    typing the identifier finds the word written in lowercase. Any other identifier (``os.getenv``,
    ``snake_case``, ``p53``, ``base64Encode``) stays whole and unstemmed. (Before parser version 3
    every identifier stayed whole: a lowercase ``pagerduty`` never met ``PagerDuty``.)"""
    if is_identifier(whole):
        return [whole] if len(whole) <= TERM_MAX_CHARS else []
    return _word_terms(whole)


def _analyse_surface(chunk: str) -> tuple[str, ...]:
    """Exact-match tokens of one raw chunk: folded, unstemmed, identifiers whole, stop words kept."""
    folded = fold(chunk.strip(_APOSTROPHES))
    if not folded:
        return ()
    if _CJK_RE.search(folded) is None:
        return (folded,)
    out: list[str] = []
    pos = 0
    for m in _CJK_RE.finditer(folded):
        if m.start() > pos:
            out.append(folded[pos : m.start()])
        out.extend(m.group())  # one token per character: phrase positions stay exact
        pos = m.end()
    if pos < len(folded):
        out.append(folded[pos:])
    return tuple(out)


_CHUNK_TERMS = _ChunkCache(_analyse_chunk)
_CHUNK_SURFACE = _ChunkCache(_analyse_surface)
#: The index terms of one raw chunk (cached).
_chunk_terms = _CHUNK_TERMS.__getitem__


def _analyse_piece(piece: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(index terms, surface tokens)`` of one whitespace-free piece of text."""
    if piece.isalnum():  # one chunk (most pieces)
        return _CHUNK_TERMS[piece], _CHUNK_SURFACE[piece]
    chunks = _CHUNK_RE.findall(piece)
    if len(chunks) == 1:
        return _CHUNK_TERMS[chunks[0]], _CHUNK_SURFACE[chunks[0]]
    return (tuple(chain.from_iterable(map(_CHUNK_TERMS.__getitem__, chunks))),
            tuple(chain.from_iterable(map(_CHUNK_SURFACE.__getitem__, chunks))))


class _PieceCache(_ChunkCache):
    """Piece → its index terms (or surface tokens); a miss analyses the piece once for both caches
    (indexing asks for both)."""

    __slots__ = ("_twin", "_side")

    def __init__(self, side: int) -> None:
        super().__init__(_analyse_chunk)  # (unused: see __missing__)
        self._side = side
        self._twin: _PieceCache = self

    def __missing__(self, piece: str) -> tuple[str, ...]:
        if len(self) >= CHUNK_CACHE_ENTRIES:
            self.clear()
        if len(self._twin) >= CHUNK_CACHE_ENTRIES:
            self._twin.clear()
        both = _analyse_piece(piece)
        self[piece] = both[self._side]
        self._twin[piece] = both[1 - self._side]
        return both[self._side]


# Whitespace-separated pieces of text ("cells,", "(TNF-alpha)") and their tokens. No chunk spans
# whitespace (no whitespace character is a word character or a connector: checked over every code
# point), so a text's chunks are its pieces' chunks in order; and pieces repeat as much as words
# do, so most of a text is analysed by ``str.split`` and one cache lookup a piece, both in C.
_PIECE_TERMS = _PieceCache(0)
_PIECE_SURFACE = _PieceCache(1)
_PIECE_TERMS._twin, _PIECE_SURFACE._twin = _PIECE_SURFACE, _PIECE_TERMS


# What indexing hands tantivy: piece -> its index terms (``_PIECE_BODY``) and its surface tokens
# (``_PIECE_EXACT``), each whitespace-joined, so a block's fields are one ``str.join`` of its pieces'
# strings. No term and no surface token is empty (a word's term is kept with two characters or more,
# or as an important short term; a whole identifier keeps its connectors and its ASCII letters and
# digits; an empty fold gives no surface token), so ``filter(None, ...)`` over the pieces' strings
# leaves out exactly the pieces without any. Plain dicts (``block_fields`` reads them from C and
# catches the KeyError of a text with new pieces), filled together by ``_add_pieces`` for all of a
# text's new pieces at once (a set difference from C finds them), emptied together when
# ``CHUNK_CACHE_ENTRIES`` would be exceeded.
_PIECE_BODY: dict[str, str] = {}
_PIECE_EXACT: dict[str, str] = {}

# A piece whose only chunk is a plain ASCII word: a lowercase or capitalised word, or all capitals
# (no camelCase hump, so not an identifier), or ASCII digits, between characters that are not word
# characters ("cells,", "(The", "DNA)", "2013."). Its index term is the lowered word stemmed, unless
# ``_keep`` drops it, and its surface token the lowered word, as ``_analyse_chunk`` and
# ``_analyse_surface`` give (checked over every piece of the seven corpora of bench/analysis_identity.py).
_PLAIN_PIECE_RE = re.compile(r"\W*([A-Z]?[a-z]+|[A-Z]+|[0-9]+)\W*")
_NO_CHUNK_RE = re.compile(r"\W*")
# A piece whose only chunk is ASCII without an apostrophe ("TNF-alpha,", "(p53)", "src/cli.py"):
# analysed by ``_ascii_chunk_fields`` without the chunk caches.
_ASCII_CHUNK_PIECE_RE = re.compile(r"\W*([A-Za-z0-9_]+(?:[.\-/:@#+][A-Za-z0-9_]+)*)\W*")


def _ascii_chunk_fields(chunk: str, stems: dict[str, str]) -> tuple[str, str]:
    """``(index terms, surface token)`` of an ASCII chunk without apostrophes, whitespace-joined:
    ``_analyse_chunk`` and ``_analyse_surface`` with folding as lowering (ASCII) and the stems of
    ``stems`` (filled as needed)."""
    whole = chunk.lower()
    if not is_identifier(chunk):
        terms = _word_terms(whole)
        return " ".join(terms), whole
    heads = _whole_terms(whole)
    terms = list(heads)
    for part in identifier_parts(chunk):
        word = part.lower()
        if _keep(word):
            term = stems.get(word)
            if term is None:
                term = stems[word] = _STEMMER.stemWord(word)
            if term not in heads:
                terms.append(term)
    return " ".join(terms), whole


def _add_pieces(pieces: Iterable[str]) -> None:
    """Analyse new ``pieces`` into ``_PIECE_BODY`` and ``_PIECE_EXACT``: pieces of one plain word
    together (one ``stemWords`` call over their words), pieces of one ASCII chunk without an
    apostrophe by ``_ascii_chunk_fields`` (no chunk cache), the others through the chunk caches
    (``_analyse_piece``). The same strings as ``" ".join`` of ``_analyse_piece``'s tuples: every
    distinct piece of the seven corpora of bench/analysis_identity.py (421,788) was compared."""
    plain_pieces: list[str] = []
    words: list[str] = []
    match = _PLAIN_PIECE_RE.fullmatch
    ascii_chunk = _ASCII_CHUNK_PIECE_RE.fullmatch
    stems: dict[str, str] = {}
    for piece in pieces:
        m = match(piece)
        if m is not None:
            plain_pieces.append(piece)
            words.append(m.group(1).lower())
        elif _NO_CHUNK_RE.fullmatch(piece) is not None:
            _PIECE_BODY[piece] = _PIECE_EXACT[piece] = ""
        elif (m := ascii_chunk(piece)) is not None:
            _PIECE_BODY[piece], _PIECE_EXACT[piece] = _ascii_chunk_fields(m.group(1), stems)
        else:
            terms, surface = _analyse_piece(piece)
            _PIECE_BODY[piece] = " ".join(terms)
            _PIECE_EXACT[piece] = " ".join(surface)
    if not words:
        return
    kept = [w for w in words if w not in stems and _keep(w)]
    if kept:
        stems.update(zip(kept, _STEMMER.stemWords(kept), strict=True))
    _PIECE_BODY.update(zip(plain_pieces, map(stems.get, words, [""] * len(words)), strict=True))
    _PIECE_EXACT.update(zip(plain_pieces, words, strict=True))


def tokenize(text: str) -> list[Token]:
    """Analyse ``text`` into index terms with spans (see the module docstring).

    Returns tokens in text order; a term may repeat (term frequency matters for ranking).
    """
    tokens: list[Token] = []
    for m in _CHUNK_RE.finditer(text):
        start, end = m.span()
        for term in _chunk_terms(m.group()):
            tokens.append(Token(term, start, end))
    return tokens


@lru_cache(maxsize=4096)
def _prefixes(terms: frozenset[str]) -> tuple[str, ...]:
    # Every ASCII surface form of a term contains the term's first characters (stemming changes
    # only endings, so a short stem loses its last character here: "cry" -> "cri" -> "cr").
    return tuple(sorted({t[: max(2, min(4, len(t) - 1))] for t in terms}))


_NON_ASCII_WORD_RUN_RE = re.compile(r"[^\W\x00-\x7f]+")
_ASCII_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


@lru_cache(maxsize=4096)
def _all_ascii(terms: frozenset[str]) -> bool:
    return all(t.isascii() for t in terms)


@lru_cache(maxsize=65_536)
def _folds_to_some_ascii(run: str) -> bool:
    return any(ch.isascii() for ch in fold(run))


def _is_chunk_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _may_start_part(text: str, i: int) -> bool:
    """Whether an ASCII word part (see ``identifier_parts``) can begin at ``text[i]``: after a
    character that is not a letter or digit, at a letter/digit boundary, or at a capital after a
    lowercase letter ("getUser") or before one ("HTTPResponse"). A prefix found inside a word part
    ("cel" in "excellent") is not the start of any term's surface form."""
    if i == 0:
        return True
    before, here = text[i - 1], text[i]
    if not before.isalnum() or before.isdigit() != here.isdigit():
        return True
    return here.isupper() and (before.islower() or text[i + 1 : i + 2].islower())


def find_terms(text: str, terms: frozenset[str]) -> list[Token]:
    """The tokens of ``text`` whose term is in ``terms``, in text order.

    Same result as ``[t for t in tokenize(text) if t.term in terms]``, but only the chunks around a
    cheap prefix match, or holding a non-ASCII word character, are analysed (what snippets need,
    many times per query).
    """
    if not terms:
        return []
    lowered = text.lower()
    if len(lowered) != len(text):
        return [t for t in tokenize(text) if t.term in terms]
    # Where a prefix of a query term occurs (str.find is a fast C scan; a case-insensitive regex
    # alternation costs ten times more on a long block) ...
    hits: list[int] = []
    for prefix in _prefixes(terms):
        i = lowered.find(prefix)
        while i != -1:
            if _may_start_part(text, i):
                hits.append(i)
            i = lowered.find(prefix, i + 1)
    if not text.isascii():
        # ... and every run of non-ASCII word characters (accents and CJK change the surface form):
        # the chunks holding them are analysed (a run lies inside one chunk). When every query term
        # is ASCII, a run that folds to no ASCII character (Cyrillic, CJK) and touches no ASCII
        # letter or digit ("东京cells" splits into two parts) adds no ASCII term: the other word parts
        # of its chunk start after a connector, where the prefix scan above looks. (Analysing every
        # such chunk of a non-English block cost more than the rest of its snippet.)
        ascii_terms = _all_ascii(terms)
        for m in _NON_ASCII_WORD_RUN_RE.finditer(text):
            start, end = m.span()
            if (not ascii_terms or _folds_to_some_ascii(m.group())
                    or text[end : end + 1] in _ASCII_ALNUM or (start and text[start - 1] in _ASCII_ALNUM)):
                hits.append(start)
    hits.sort()
    out: list[Token] = []
    last_end = -1
    for start in hits:
        if start < last_end:
            continue
        first = start
        # Back up to where the chunk holding this match begins (runs of word characters joined
        # by single connectors), exactly where a left-to-right scan would have started it.
        while start > 0 and (
            _is_chunk_char(text[start - 1])
            or (text[start - 1] in _CONNECTORS and start > 1 and _is_chunk_char(text[start - 2])
                and _is_chunk_char(text[start]))
        ):
            start -= 1
        chunk = _CHUNK_RE.match(text, start)
        if chunk is None or chunk.end() <= first:
            continue
        last_end = chunk.end()
        for term in _chunk_terms(chunk.group()):
            if term in terms:
                out.append(Token(term, chunk.start(), chunk.end()))
    return out


def analyze(text: str) -> list[str]:
    """Index terms of ``text`` in order, with repeats; the fast path of :func:`tokenize`."""
    # Pieces found by str.split, each looked up in the cache from C: no Python code runs for a piece
    # seen before.
    return list(chain.from_iterable(map(_PIECE_TERMS.__getitem__, text.split())))


def block_terms(text: str, title_terms: Sequence[str]) -> str:
    """The terms a block is indexed under, whitespace-joined: its text's (:func:`analyze`), with its
    document title's (``analyze(title)``) in front unless the text already starts with them (so every
    block of a document carries its title). What the bm25 lane's postings hold for the block; the
    catalog keeps the text and title, not these, and they are computed again when needed."""
    terms = analyze(text)
    if title_terms and terms[: len(title_terms)] != list(title_terms):
        terms = [*title_terms, *terms]
    return " ".join(terms)


def _joined_body(pieces: list[str]) -> str:
    """``" ".join`` of the index terms of ``pieces`` (whitespace-free), new pieces analysed first."""
    try:  # most texts: every piece was seen before
        return " ".join(filter(None, map(_PIECE_BODY.__getitem__, pieces)))
    except KeyError:
        new = set(pieces).difference(_PIECE_BODY)
        if len(_PIECE_BODY) + len(new) > CHUNK_CACHE_ENTRIES:
            _PIECE_BODY.clear()
            _PIECE_EXACT.clear()
            new = set(pieces)
        _add_pieces(new)
        return " ".join(filter(None, map(_PIECE_BODY.__getitem__, pieces)))


def joined_terms(text: str) -> str:
    """``" ".join(analyze(text))``, from the caches indexing fills (the postings' title, path and tag
    fields)."""
    return _joined_body(text.split())


def title_terms_of(title: str) -> list[str]:
    """``analyze(title)``; an ASCII title's from the caches indexing fills (no ASCII term holds
    whitespace, so its joined terms split back into them)."""
    if title.isascii():
        return joined_terms(title).split()
    return analyze(title)


def block_fields(text: str, title_terms: Sequence[str]) -> tuple[str, str]:
    """``(block_terms(text, title_terms), " ".join(surface_tokens(text)))`` with one split of the
    text: the bm25 and exact fields of a block's postings."""
    pieces = text.split()
    body = _joined_body(pieces)
    exact = " ".join(filter(None, map(_PIECE_EXACT.__getitem__, pieces)))
    if title_terms:
        title = " ".join(title_terms)
        # The text's terms start with the title's only if the strings do (then the terms are
        # compared: a term may hold a space, as NFKD gives some ligatures one).
        if not (body == title or body.startswith(title + " ")) or list(
                islice(chain.from_iterable(map(_PIECE_TERMS.__getitem__, pieces)), len(title_terms))
        ) != list(title_terms):
            body = f"{title} {body}" if body else title
    return body, exact


def surface_tokens(text: str) -> list[str]:
    """Exact-lane tokens of ``text``: folded words in order, nothing stemmed or removed.

    Two texts contain the same phrase exactly when one's surface-token sequence contains the
    other's; punctuation between words does not count.
    """
    return list(chain.from_iterable(map(_PIECE_SURFACE.__getitem__, text.split())))


#: What joins two words inside one chunk besides a camelCase hump or a letter/digit boundary: a
#: connector (apostrophes aside: ``engine's`` is a word and its possessive) or an underscore. A
#: quoted phrase's words match a surface token writing them so (see :func:`joined_pattern`).
WORD_JOINERS = "./\\-:@#+_"
_JOINER_CLASS = "[" + re.escape(WORD_JOINERS) + "]"


def joined_prefixes(left: str, right: str) -> list[str]:
    """How every surface token that writes the surface tokens ``left`` then ``right`` joined into
    one chunk begins: ``left``, one of ``WORD_JOINERS`` or nothing, then ``right``
    (``"files", "directories"`` → ``"files.directories"``, ``"files/directories"``, ...,
    ``"filesdirectories"``). Nothing joins two digits (``"1", "2"`` is not ``"12"``), and a CJK
    character is a surface token of its own (never joined): ``[]`` then."""
    if _CJK_RE.search(left[-1:] + right[:1]) is not None:
        return []
    out = [left + joiner + right for joiner in WORD_JOINERS]
    if not (left[-1:].isdigit() and right[:1].isdigit()):
        out.append(left + right)
    return out


@lru_cache(maxsize=1024)
def joined_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    """A pattern whose ``fullmatch`` is a surface token writing ``words`` (two or more surface
    tokens) as one chunk: each two joined by one of ``WORD_JOINERS`` or by nothing (not between two
    digits), as :func:`joined_prefixes` says; group ``i`` is what joins word ``i - 1`` to word ``i``.
    ``("src", "cli", "py")`` fully matches ``"src/cli.py"``, ``"src_cli_py"`` and ``"srccli.py"``."""
    parts = [re.escape(words[0])]
    for left, right in pairwise(words):
        both_digits = left[-1:].isdigit() and right[:1].isdigit()
        parts.append(f"({_JOINER_CLASS})" if both_digits else f"({_JOINER_CLASS}?)")
        parts.append(re.escape(right))
    return re.compile("".join(parts))


def joined_witness(match: re.Match[str], words: Sequence[str]) -> tuple[str, ...] | None:
    """What tells a surface token matched by :func:`joined_pattern` ``(words)`` (``match``) written
    with camelCase humps from one word written whole: the exact field is folded, so
    ``"getusername"`` is the surface token of ``getUserName`` and of ``getusername`` alike. Returns
    the index terms (:func:`analyze`) of the chunk with a hump at each join of two letters without a
    joiner: the bm25 field holds them consecutively where such a chunk is written (an identifier is
    indexed whole, then in parts), and a word written whole gives its one stem instead. None when
    no join is a hump (each has a joiner, or a digit on a side): the surface token alone then
    writes exactly these words."""
    chunk = [words[0]]
    humps = False
    for i, word in enumerate(words[1:], start=1):
        joiner = match.group(i)
        if not joiner and chunk[-1][-1:].isalpha() and word[:1].isalpha():
            humps = True
            word = word[:1].upper() + word[1:]
        chunk.append(joiner + word)
    return _analyse_chunk("".join(chunk)) if humps else None


_DOTTED_RE = re.compile(r"\w{2,}(?:\.\w{2,})+")
_PATH_RE = re.compile(r"[\w.-]+(?:/[\w.-]+)*/[\w-]+\.\w+")
_CODE_HUMP_RE = re.compile(r"[a-z][A-Z][a-z]")


def is_code_identifier(chunk: str, called: bool = False) -> bool:
    """True for a chunk that reads as a code identifier, the one rule every part of sleuth uses.

    Code identifiers: ``snake_case`` (an underscore inside), dotted names whose parts have two or
    more characters (``os.getenv``, ``sleuth.engine``), file paths with an extension
    (``src/cli.py``), camelCase with a lower-upper-lower hump (``openCatalog``, ``HttpClient``),
    and any name written as a call (``called``: ``()`` follows it). Not prose tokens such as
    ``mRNAs``, ``iPSC``, ``i.e``, ``COX-2`` or ``p53``, which are indexed whole but are ordinary
    words in text.
    """
    return bool(called or "_" in chunk.strip("_") or _DOTTED_RE.fullmatch(chunk) or _PATH_RE.fullmatch(chunk)
                or _CODE_HUMP_RE.search(chunk))


def identifier_spans(text: str) -> list[tuple[str, str]]:
    """``(folded, surface)`` of each distinct code identifier (:func:`is_code_identifier`) in
    ``text``, in order of appearance; ``surface`` is the chunk as written."""
    seen: dict[str, str] = {}
    for m in _CHUNK_RE.finditer(text):
        chunk = m.group().strip(_APOSTROPHES)
        if chunk and is_code_identifier(chunk, text.startswith("()", m.end())):
            seen.setdefault(fold(chunk), chunk)
    return list(seen.items())


def identifiers(text: str) -> list[str]:
    """Folded whole code identifiers in ``text`` (deduplicated, in order of appearance): what the
    exact lane looks up (see :func:`is_code_identifier`)."""
    return [folded for folded, _ in identifier_spans(text)]


def unique(terms: Iterable[str]) -> list[str]:
    """``terms`` without repeats, first occurrence order kept (the seed's "dedupe")."""
    return list(dict.fromkeys(terms))
