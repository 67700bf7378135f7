"""The data lifecycle: redacting a message everywhere it is stored or indexed."""
