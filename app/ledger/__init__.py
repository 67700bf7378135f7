"""The context ledger: what each recorded context was made of, and its byte-for-byte rebuild."""
