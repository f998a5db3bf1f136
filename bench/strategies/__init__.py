"""Memory strategies replayed through each haystack: full_context, rag, compaction, om, oracle."""
