"""The checked-HTTP client: which addresses we may connect to, an httpx transport that connects only to the
addresses it checked, and why a fetch failed.

A library below everything that calls a URL someone else chose: the crawler (`ingestion.crawl`) and the
calls to tenant-set URLs (`config.outbound`). It imports no package of this project and no Django.
"""
