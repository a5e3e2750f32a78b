"""A gzipped upload (page.html.gz, export.csv.gz): decompressed within the bomb limits, then parsed by
whichever parser fits what was inside. One layer only: a gzip inside a gzip is refused."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ingestion.parsers.base import ParseError, ParseOptions, Parser, Segment
from ingestion.parsers.safety import gunzip_limited

GZIP = "application/gzip"


class GzipParser(Parser):
    name = "gzip"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 100 if sniffed_type == GZIP else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        from ingestion.parsers import registry

        inner_name = filename[:-3] if filename.lower().endswith(".gz") else filename
        with tempfile.TemporaryDirectory(prefix="grounded-gunzip-") as folder:
            inner = Path(folder) / "inner"
            gunzip_limited(path, inner)
            if registry.detect_type(inner, inner_name) == GZIP:
                raise ParseError(
                    "The file is compressed twice (a gzip inside a gzip); "
                    "decompress it and upload what is inside.",
                    f"{filename}: nested gzip",
                    reason="unsupported",
                    final=True,
                )
            segments = registry.parse_file(inner, inner_name, options=options)
        for segment in segments:
            segment.meta["compressed"] = "gzip"
        return segments
