#!/usr/bin/env python3
"""Push a folder of Markdown, MDX, text and HTML files to a Grounded agent from your CI, through the REST API.

    GROUNDED_API_KEY=gk_... python push_docs.py docs/ --api https://grounded.example.com --agent 3 \\
        --base-url https://docs.example.com [--prune] [--dry-run]

Python 3.9+ and its standard library; PyYAML is used for frontmatter when it is installed, and without it
simple `key: value` frontmatter (strings, numbers, true/false, [lists]) is read and anything else stops the
run with the file's name. Each file is a document whose id is its path relative to the folder. Frontmatter
`title`, `url` and `audiences` set those fields; every other key is metadata that search can filter on.
A document's link is its `url`, or --base-url + its path (`guides/install.md` -> `guides/install`).
Unchanged documents cost nothing: the server compares them and embeds only what changed. --prune deletes
the agent's pushed documents whose file is gone. The exit status is 1 when anything was refused.

PDF and office files are read on the server: upload them, or run `manage.py ingest` where Grounded runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

SUFFIXES = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".txt": "text",
    ".html": "html",
    ".htm": "html",
}
INDEX_NAMES = {"index", "readme", "_index"}
MAX_BATCH_BYTES = 8 * 1024 * 1024
FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)
FENCE = re.compile(r"^\s*(```|~~~)")
MDX_STATEMENT = re.compile(r"^(import|export)\s")
JSX_TAG = re.compile(r"</?[A-Z][\w.]*(\s[^<>]*)?/?>")


class Refused(Exception):
    pass


# --- reading the folder --------------------------------------------------------------------------------


def walk(root: Path) -> list[Path]:
    return [
        path
        for path in sorted(root.rglob("*"))
        if path.is_file()
        and path.suffix.lower() in SUFFIXES
        and not any(p.startswith(".") or p == "node_modules" for p in path.relative_to(root).parts)
    ]


def citation_url(external_id: str, base_url: str) -> str:
    if not base_url:
        return ""
    path = Path(external_id)
    if path.suffix.lower() in {".md", ".markdown", ".mdx", ".html", ".htm"}:
        path = path.with_suffix("")
        if path.name.lower() in INDEX_NAMES:
            parent = path.parent.as_posix()
            return base_url.rstrip("/") + "/" + ("" if parent == "." else urllib.parse.quote(parent) + "/")
    return base_url.rstrip("/") + "/" + urllib.parse.quote(path.as_posix())


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    match = FRONTMATTER.match(text)
    if match is None:
        return {}, text
    block = match.group(1)
    try:
        import yaml
    except ImportError:
        front = simple_yaml(block)
    else:
        front = yaml.safe_load(block) or {}
    if not isinstance(front, dict):
        raise Refused("the frontmatter must be a mapping of keys to values")
    return front, text[match.end() :]


def simple_yaml(block: str) -> dict[str, Any]:
    """Flat `key: value` lines without PyYAML; anything else is refused rather than misread."""
    result: dict[str, Any] = {}
    for line in block.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or line[:1].isspace() or not key.strip():
            raise Refused(f"frontmatter line {line!r} needs PyYAML (pip install pyyaml)")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            result[key.strip()] = [scalar(v) for v in value[1:-1].split(",") if v.strip()]
        elif value.startswith(("{", "|", ">", "&", "*", "!")):
            raise Refused(f"frontmatter value of {key.strip()!r} needs PyYAML (pip install pyyaml)")
        else:
            result[key.strip()] = scalar(value)
    return result


def scalar(value: str) -> Any:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    if value in ("true", "false"):
        return value == "true"
    if value in ("", "null", "~"):
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def clean_mdx(text: str) -> str:
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            if MDX_STATEMENT.match(line):
                continue
            line = JSX_TAG.sub("", line)
        lines.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def read_document(root: Path, path: Path, base_url: str) -> dict[str, Any]:
    external_id = path.relative_to(root).as_posix()
    content_field = SUFFIXES[path.suffix.lower()]
    text = path.read_text(encoding="utf-8", errors="replace")
    document: dict[str, Any] = {"external_id": external_id}
    if content_field == "markdown":
        front, text = parse_frontmatter(text)
        if path.suffix.lower() == ".mdx":
            text = clean_mdx(text)
        for key, value in front.items():
            key = str(key).replace("-", "_")
            if value is None:
                continue
            if key in ("title", "url"):
                document[key] = str(value)
            elif key in ("audiences", "audience"):
                document["audiences"] = [str(a) for a in (value if isinstance(value, list) else [value])]
            elif isinstance(value, (str, int, float, bool)) or (
                isinstance(value, list) and all(isinstance(v, (str, int, float, bool)) for v in value)
            ):
                document.setdefault("metadata", {})[key] = value
            elif hasattr(value, "isoformat"):  # YAML dates
                document.setdefault("metadata", {})[key] = value.isoformat()
            else:
                print(f"  warning  {external_id}: frontmatter key {key!r} skipped (not a flat value)")
    document[content_field] = text
    url = document.get("url") or citation_url(external_id, base_url)
    if url:
        document["url"] = url
    return document


# --- talking to Grounded -------------------------------------------------------------------------------


class Client:
    def __init__(self, api: str, agent: int, key: str) -> None:
        self.base = f"{api.rstrip('/')}/api/v1/agents/{agent}/documents"
        self.key = key

    def call(self, method: str, url: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 (http(s), checked in main)
        request.add_header("Authorization", f"Bearer {self.key}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=300) as response:  # noqa: S310
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                return exc.code, json.loads(raw)
            except ValueError:
                return exc.code, raw.decode(errors="replace")[:500]

    def batch(self, documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
        status, body = self.call("POST", f"{self.base}:batch", {"documents": documents})
        if status != 200:
            raise Refused(f"the batch was refused ({status}): {body}")
        return body["results"]

    def external_ids(self) -> list[str]:
        ids, url = [], f"{self.base}?page_size=1000"
        while url:
            status, body = self.call("GET", url)
            if status != 200:
                raise Refused(f"listing the documents failed ({status}): {body}")
            ids += [d["external_id"] for d in body["results"]]
            url = body["next"]
        return ids

    def delete(self, external_id: str) -> int:
        status, _ = self.call("DELETE", f"{self.base}/{urllib.parse.quote(external_id, safe='/')}")
        return status


def batches(documents: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    """At most `size` documents and about MAX_BATCH_BYTES of JSON per call."""
    groups: list[list[dict[str, Any]]] = [[]]
    weight = 0
    for document in documents:
        cost = len(json.dumps(document))
        if groups[-1] and (len(groups[-1]) >= size or weight + cost > MAX_BATCH_BYTES):
            groups.append([])
            weight = 0
        groups[-1].append(document)
        weight += cost
    return [g for g in groups if g]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--api", required=True, help="Grounded's address, e.g. https://grounded.example.com")
    parser.add_argument("--agent", type=int, required=True)
    parser.add_argument("--base-url", default="", help="cite each file at this address + its path")
    parser.add_argument("--prune", action="store_true", help="delete pushed documents whose file is gone")
    parser.add_argument("--dry-run", action="store_true", help="print what would be sent; change nothing")
    parser.add_argument("--batch", type=int, default=100, help="documents per request (server max: 200)")
    args = parser.parse_args(argv)
    key = os.environ.get("GROUNDED_API_KEY", "")
    if not key:
        print("Set GROUNDED_API_KEY to a workspace API key.", file=sys.stderr)
        return 2
    if urllib.parse.urlsplit(args.api).scheme not in ("http", "https"):
        print("--api must be an http(s) address.", file=sys.stderr)
        return 2
    root = args.path.resolve()
    if not root.is_dir():
        print(f"{root} is not a folder.", file=sys.stderr)
        return 2
    client = Client(args.api, args.agent, key)
    documents, failed = [], 0
    files = walk(root)
    for path in files:
        try:
            documents.append(read_document(root, path, args.base_url))
        except (Refused, OSError) as exc:
            failed += 1
            print(f"  error    {path.relative_to(root).as_posix()}: {exc}", file=sys.stderr)
    counts = {"created": 0, "updated": 0, "unchanged": 0, "invalid": 0}
    if args.dry_run:
        for document in documents:
            print(f"  send     {document['external_id']}")
    else:
        try:
            for group in batches(documents, args.batch):
                for result in client.batch(group):
                    counts[result["result"]] += 1
                    if result["status"] >= 400:
                        failed += 1
                        error = result.get("error") or {}
                        reason = error.get("fields") or error.get("message")
                        print(f"  error    {result['external_id']}: {reason}", file=sys.stderr)
                    elif result["result"] != "unchanged":
                        print(f"  {result['result']:<9}{result['external_id']}")
        except Refused as exc:
            print(f"Stopped: {exc}", file=sys.stderr)
            return 1
    removed = 0
    if args.prune:
        present = {path.relative_to(root).as_posix() for path in files}
        try:
            gone = sorted(set(client.external_ids()) - present)
        except Refused as exc:
            print(f"Stopped: {exc}", file=sys.stderr)
            return 1
        for external_id in gone:
            if args.dry_run:
                print(f"  remove   {external_id}")
            elif client.delete(external_id) in (204, 404):
                removed += 1
                print(f"  removed  {external_id}")
            else:
                failed += 1
                print(f"  error    {external_id}: could not be deleted", file=sys.stderr)
    if args.dry_run:
        print(f"Dry run: {len(documents)} files to send. Nothing was changed.")
    else:
        print(
            f"{counts['created']} created, {counts['updated']} updated, {counts['unchanged']} unchanged, "
            f"{removed} removed, {failed} failed."
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
