"""The edit pages: stage, review and apply an offset edit, a move, a removal; import and export."""
