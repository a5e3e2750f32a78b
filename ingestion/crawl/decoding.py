"""Decompressing bodies from outside without trusting their size.

zlib is asked for at most `OUTPUT_STEP` bytes at a time, so a gzip bomb costs us one step of memory and
fails when the decoded total passes the limit. Servers mislabel bodies often (gzip that isn't, deflate with
or without the zlib header), so the first bytes decide how to decode, not the label alone.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from checked_http.errors import PermanentFetchError, TooLargeError

OUTPUT_STEP = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"


class UnsupportedEncoding(ValueError):
    pass


def _looks_like_zlib(head: bytes) -> bool:
    return len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0


def _looks_like_text(head: bytes) -> bool:
    first = head.lstrip()[:1]
    return not first or first in (b"<", b"\xef", b"\xfe", b"\xff") or 0x20 <= first[0] < 0x7F


class StreamDecoder:
    """Feed it a body chunk by chunk; get decoded chunks back, never more than `max_decoded` bytes in all.

    `content_encoding` is the response header; "auto" sniffs gzip and zlib by their magic bytes (for bodies
    like sitemap.xml.gz that are compressed files rather than compressed transfers).
    """

    def __init__(self, content_encoding: str, *, max_decoded: int) -> None:
        encodings = [e.strip().lower() for e in content_encoding.split(",") if e.strip()]
        encodings = [e for e in encodings if e != "identity"]
        if len(encodings) > 1:
            raise UnsupportedEncoding(f"stacked content encodings {content_encoding!r}")
        self.encoding = {"x-gzip": "gzip"}.get(encodings[0], encodings[0]) if encodings else ""
        if self.encoding not in ("", "gzip", "deflate", "auto"):
            raise UnsupportedEncoding(f"content encoding {content_encoding!r}")
        self.max_decoded = max_decoded
        self.decoded_total = 0
        self._head = b""
        self._decompressor: zlib._Decompress | None = None
        self._mode: str | None = None  # "plain", "gzip", "zlib" or "raw" once decided

    def feed(self, chunk: bytes) -> list[bytes]:
        if self._mode is None:
            self._head += chunk
            if len(self._head) < 2:
                return []
            chunk, self._head = self._head, b""
            self._choose_mode(chunk)
        return list(self._decode(chunk))

    def flush(self) -> list[bytes]:
        parts: list[bytes] = []
        if self._mode is None and self._head:
            chunk, self._head = self._head, b""
            self._choose_mode(chunk)
            parts.extend(self._decode(chunk))
        if self._decompressor is not None:
            # A truncated stream gives what it has: feeds and sitemaps cut short are still worth reading.
            parts.extend(self._decode(b"", final=True))
        return parts

    def _choose_mode(self, head: bytes) -> None:
        if self.encoding == "gzip" or self.encoding == "auto":
            if head.startswith(GZIP_MAGIC):
                self._start("gzip")
            elif self.encoding == "auto" and _looks_like_zlib(head):
                self._start("zlib")
            elif self.encoding == "auto" and not _looks_like_text(head):
                self._start("raw")  # headerless deflate; falls back to plain if it isn't
            else:
                self._mode = "plain"  # labelled gzip but isn't
        elif self.encoding == "deflate":
            self._start("zlib" if _looks_like_zlib(head) else "raw")
        else:
            self._mode = "plain"

    def _start(self, mode: str) -> None:
        wbits = {"gzip": 16 + zlib.MAX_WBITS, "zlib": zlib.MAX_WBITS, "raw": -zlib.MAX_WBITS}[mode]
        self._mode = mode
        self._decompressor = zlib.decompressobj(wbits)
        self._first = True

    def _count(self, piece: bytes) -> bytes:
        self.decoded_total += len(piece)
        if self.decoded_total > self.max_decoded:
            raise TooLargeError(
                "This page is too large once decompressed, so we skipped it.",
                f"more than {self.max_decoded} bytes after decompression",
            )
        return piece

    def _decode(self, data: bytes, *, final: bool = False) -> Iterator[bytes]:
        if self._mode == "plain":
            if data:
                yield self._count(data)
            return
        assert self._decompressor is not None
        while True:
            try:
                piece = self._decompressor.decompress(data, OUTPUT_STEP)
            except zlib.error:
                if self._first and self._mode in ("raw", "zlib"):
                    # "deflate" that is not compressed at all: pass it through as it came.
                    self._mode, self._decompressor = "plain", None
                    yield self._count(data)
                    return
                raise PermanentFetchError(
                    "The site sent a damaged compressed page, so we couldn't read it.",
                    f"{self._mode} stream corrupt after {self.decoded_total} decoded bytes",
                ) from None
            self._first = False
            if piece:
                yield self._count(piece)
            data = self._decompressor.unconsumed_tail
            if self._decompressor.eof and self._decompressor.unused_data and self._mode == "gzip":
                # Concatenated gzip members are one body (RFC 1952).
                rest = self._decompressor.unused_data
                if not rest.startswith(GZIP_MAGIC):
                    return
                self._start("gzip")
                data = rest
                continue
            if not data:
                break
        if final and not self._decompressor.eof:
            tail = self._decompressor.flush(OUTPUT_STEP)
            if tail:
                yield self._count(tail)


def decompress_sniffed(body: bytes, *, max_decoded: int) -> bytes:
    """A whole body, gunzipped or inflated if its magic bytes say so, else unchanged. Raises TooLargeError."""
    decoder = StreamDecoder("auto", max_decoded=max_decoded)
    return b"".join([*decoder.feed(body), *decoder.flush()])
