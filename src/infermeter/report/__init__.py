"""Reports: the self-contained HTML report of one or more runs."""
