"""The book's options, each declared once (``mangaka/options.py`` says what comes from them): how a
book is cut into chapters, which of them run, and how many requests are in flight at once. The
flags of ``book`` and ``queue`` and the widgets of Split Chapters (``max_chars``, ``chapters``) and
Remote LLM (``concurrency``) are made from here.
"""

from __future__ import annotations

from ..chapters import DEFAULT_MAX_CHARS
from ..options import Option, declare

MAX_CONCURRENCY = 64

BOOK_OPTIONS = declare(
    Option(
        "chapters", "", "Which chapters to output, by position: 3-7, 1,3,5-6, 4- or -2. Empty = all.",
        "输出哪些章节（按位置）：3-7、1,3,5-6、4- 或 -2。空 = 全部。",
        flag="--chapters", widget="chapters", name_zh="章节范围", metavar="RANGE",
        name_ja="章の範囲", help_ja="出力する章（位置で指定）：3-7、1,3,5-6、4-、-2。空 = すべて。",
        name_ko="챕터 범위", help_ko="출력할 챕터(위치로 지정): 3-7, 1,3,5-6, 4-, -2. 비우면 전부.",
    ),
    Option(
        "max_chars", DEFAULT_MAX_CHARS,
        "Only for books without chapter headings: the book is cut into parts of at most this many "
        "characters, at paragraph and sentence ends. Chapters found by headings are never cut.",
        "只用于没有章节标题的书：在段落和句子结尾处切成每段最多这么多字符。按标题找到的章节绝不切开。",
        low=500, high=200_000, flag="--max-chars", widget="max_chars", name_zh="最大字符数", metavar="CHARS",
        name_ja="最大文字数",
        help_ja="章見出しのない本のみ：段落と文の終わりで、最大この文字数の部分に切ります。"
        "見出しで見つかった章は切りません。",
        name_ko="최대 글자 수",
        help_ko="챕터 제목이 없는 책에만 적용: 문단과 문장 끝에서 최대 이 글자 수씩 나눕니다. 제목으로 찾은 "
        "챕터는 절대 나누지 않습니다.",
    ),
    Option(
        "concurrency", 1, "Requests in flight at once (a book: chapters written side by side)",
        "同时发出的请求数（整本书：并行写的章节数）",
        low=1, high=MAX_CONCURRENCY, flag="--concurrency", widget="concurrency", name_zh="并发数",
        name_ja="同時リクエスト数", help_ja="同時に送るリクエストの数（本全体：並行して書く章の数）",
        name_ko="동시 요청 수", help_ko="동시에 보내는 요청 수(책 전체: 나란히 쓰는 챕터 수)",
    ),
)  # fmt: skip
