"""The data lifecycle: redacting a message, erasing a user with a signed receipt."""
