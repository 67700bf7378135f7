"""What the models cost: a row per model or embedding call, the report by day and model."""
