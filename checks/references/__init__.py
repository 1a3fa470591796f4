"""The libraries a check judges against: torch's lib/, snapshots of it, and their import set."""
