"""Agent sessions and their messages: creation, append with gap-free seq, reads."""
