"""The code around the cursor: open documents, the folder's files, the workspace's definitions, recent edits, and
what the prompt and the n-gram evidence take from them."""
