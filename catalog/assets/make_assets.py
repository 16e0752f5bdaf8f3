#!/usr/bin/env python3
"""Writes the small test inputs of the catalog deterministically (standard library only).

    python3 catalog/assets/make_assets.py

speech.wav: 0.75 s of a 16 kHz mono 16-bit chirp with a syllable-like envelope (24 kB).
shapes.png: a 32x32 RGB image with a red square and a blue disc on a gray gradient.
wordpiece/tokenizer.json: a BERT-style WordPiece tokenizer (lower-casing, `##` continuations) whose
  ids fit the 259-token embedding tables of the generated encoder and reranker.
The profiles refer to them relative to their MODEL.toml (../assets/...); their SHA-256 is part of
every case identity that uses them.
"""
import json
import math
import os
import struct
import wave
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def speech_wav(path, rate=16000, seconds=0.75):
    n = int(rate * seconds)
    frames = bytearray()
    for i in range(n):
        t = i / rate
        f = 180.0 + 420.0 * t  # rising pitch
        envelope = 0.5 * (1 - math.cos(2 * math.pi * 4 * t))  # four "syllables" per second
        v = 0.6 * envelope * (math.sin(2 * math.pi * f * t) + 0.3 * math.sin(2 * math.pi * 3 * f * t))
        frames += struct.pack("<h", max(-32768, min(32767, int(round(v * 32767 / 1.3)))))
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(frames))


def shapes_png(path, size=32):
    rows = []
    for y in range(size):
        row = bytearray([0])  # filter: none
        for x in range(size):
            g = 60 + (x + y) * 2
            r, gg, b = g, g, g
            if 4 <= x < 14 and 4 <= y < 14:
                r, gg, b = 220, 40, 40
            if (x - 22) ** 2 + (y - 21) ** 2 <= 36:
                r, gg, b = 40, 60, 220
            row += bytes([r, gg, b])
        rows.append(bytes(row))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n"
    png += chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
    png += chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


# Whole words of the catalog's texts and common English; everything else falls back to suffixes and
# single characters, so no text the catalog holds becomes [UNK].
WORDS = """the a an and or of to in on for is are be not do i how you it that with as at by from this
keep benchmark benchmarks honest warm up before timing time report percentiles percentile best run runs
quick brown fox jump over lazy dog need evidence anecdotes cache hit avoid rebuild engine engines
latency name method pin thread close other program measure measuring compare interleaved one ratio
banana rich potassium record machine load exact command fast faster slow model models build layer
layers tensor speed memory accuracy precision batch token tokens text image audio video query document
documents score vector sentence short long first last new old same each every all no more less than
when where what why which who result results number numbers data file files test tests case cases
show shows work works use used make makes made good bad high low small large big very much many
""".split()
SUFFIXES = ["##s", "##es", "##ed", "##ing", "##er", "##ers", "##ly", "##tion", "##ment", "##ness",
            "##al", "##ic", "##ity", "##ive", "##ize", "##able"]
SPECIALS = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
PUNCT = ".,?!'-:;()\"/"
VOCAB_LIMIT = 259


def wordpiece_tokenizer(path):
    tokens = SPECIALS + list(ALNUM + PUNCT) + ["##" + c for c in ALNUM] + SUFFIXES
    for w in WORDS:
        if w not in tokens:
            tokens.append(w)
    assert len(tokens) <= VOCAB_LIMIT, len(tokens)
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i, t in enumerate(SPECIALS)]
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": special,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(tokens)}},
    }
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    speech_wav(os.path.join(HERE, "speech.wav"))
    shapes_png(os.path.join(HERE, "shapes.png"))
    wordpiece_tokenizer(os.path.join(HERE, "wordpiece", "tokenizer.json"))
