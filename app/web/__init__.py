"""HTTP edges shared by every router: how request bodies are read and how errors are documented."""
