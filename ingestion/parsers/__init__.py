"""File parsers for uploads: content-sniffed, scored, with fallbacks. The entry points live in registry."""
