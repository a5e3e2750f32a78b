"""Documents the customer pushes under their own ids: what a caller sends, checked (inputs), storing,
replacing, deleting and listing them (documents), and a folder read as pushed documents for
`manage.py ingest` (folder).
"""
