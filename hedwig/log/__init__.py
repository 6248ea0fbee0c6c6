"""Topic logs: dense seq-ids over a list of ledgers, with rolls, garbage collection and retention."""
