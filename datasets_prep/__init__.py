"""Real math datasets into the one `Problem` format."""
