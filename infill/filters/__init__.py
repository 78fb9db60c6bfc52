"""Post-processing filters for raw model completions: one pure `Candidate -> Candidate` function per module."""
