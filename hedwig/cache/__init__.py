"""The read-ahead cache between delivery and the topic logs."""
