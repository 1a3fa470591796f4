"""The findings model both products report, and suppressions."""
