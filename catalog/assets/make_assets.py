#!/usr/bin/env python3
"""Writes the small test inputs of the catalog deterministically (standard library only).

    python3 catalog/assets/make_assets.py

speech.wav: 0.75 s of a 16 kHz mono 16-bit chirp with a syllable-like envelope (24 kB).
shapes.png: a 32x32 RGB image with a red square and a blue disc on a gray gradient.
The profiles refer to them relative to their MODEL.toml (../assets/...); their SHA-256 is part of
every case identity that uses them.
"""
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


if __name__ == "__main__":
    speech_wav(os.path.join(HERE, "speech.wav"))
    shapes_png(os.path.join(HERE, "shapes.png"))
