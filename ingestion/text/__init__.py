"""Text into passages and quotable units: chunking (chunk_text, chunk_id), segmentation into sentences, list
items, rows and headings (segment, with pysbd made fast by pysbd_patterns and pysbd_abbreviations), and a
chunk's sentence inputs for sentence vectors (sentence_inputs)."""
